import type { ExitRow } from '../../core/index.js';

/**
 * The exit codes of send, ask, task, reply, messages and fleet: the man pages' EXIT STATUS and
 * the advice an MCP tool error carries for the same refusals. The bridge's table would be wrong
 * here: its 4 is a session named that does not exist, where a send's 4 is a recipient or a
 * message.
 */
export const MESSAGING_EXIT_TABLE: readonly ExitRow[] = [
  { code: 0, meaning: 'Done (a send is queued: accepted by the Hub, not delivered).', todo: 'follow the delivery track (oh-hai messages list)' },
  {
    code: 2,
    meaning: 'Usage error: a bad flag, address or id, no text, or a config file that is wrong (the message names it).',
    todo: 'fix what the message names; the same call fails the same way again',
  },
  {
    code: 3,
    meaning: 'The credential is missing, unknown or revoked, or agent messaging is switched off for the account.',
    todo: 'stop; a human must fix the credential or switch agent messaging on',
  },
  {
    code: 4,
    meaning: 'No such recipient or message, or the session addressed has ended.',
    todo: "check the address against the fleet (oh-hai fleet ls) or the id against what you read; an ended run gets no more mail, its agent's agent:<id> does",
  },
  {
    code: 13,
    meaning: 'The Hub is unreachable, or kept failing after the retries (each retry reuses one idempotency key).',
    todo: 'try again later with your own backoff; tell a human if it repeats',
  },
];
