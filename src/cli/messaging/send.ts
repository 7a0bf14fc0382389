import { randomUUID } from 'node:crypto';
import { type Coded, EXIT, type CodedError } from '../../core/index.js';
import type { HubFailure } from '../../hub/client/index.js';
import { parseAddress, type Message, type MessageIntent } from '../../hub/contract/index.js';
import type { AgentAccess } from './access.js';
import { withThisSession, type Say } from './attach.js';
import { hubFailureError, type FailureContext } from './failures.js';
import type { MessagingKnobs } from './access.js';
import type { ReplyRoute } from './send-lines.js';

export interface Queued {
  message: Message;
  route: ReplyRoute;
}

const ADDRESS_FORMS = 'an address is agent:<id> or agent:<id>#sess_… (see `oh-hai fleet ls`)';

/** The destination as the Hub will read it, or the usage error naming it (`where`: `--to`, `to`). */
export function checkDestination(to: string, where: string): Coded<string> {
  const parsed = parseAddress(to, where);
  return parsed.ok ? { ok: true, value: to } : { ok: false, error: { code: 'bad_address', exit: EXIT.usage, message: `${parsed.reason}; ${ADDRESS_FORMS}` } };
}

export const failureContext = (a: AgentAccess, doing: string): FailureContext => ({ hubUrl: a.hubUrl, credential: a.credential.source, doing });

/**
 * Queue a notify, ask or task as this agent, with this agent session attached when it has
 * one: one idempotency key for every retry of the body, so a retry never queues a second
 * copy. `oh-hai send|ask|task` and the MCP tools both send through here.
 */
export async function sendMessage(
  a: AgentAccess,
  knobs: MessagingKnobs,
  say: Say,
  req: { to: string; intent: MessageIntent; text: string; command: string },
): Promise<Coded<Queued>> {
  const key = `oh-hai-${randomUUID()}`;
  const body = { to: req.to, intent: req.intent, text: req.text };
  const sent = await withThisSession(a, knobs, say, (session, attempt) =>
    // A different body needs a different key: a refused first attempt queued nothing.
    a.client.send({ ...body, session, idempotency_key: attempt === 'first' ? key : `${key}-unattached` }),
  );
  if (!sent.ok) return { ok: false, error: recipientError(sent.failure, req.to, a, req.command) };
  return { ok: true, value: { message: sent.value.message, route: sent.route } };
}

/** What a refused recipient means, with the fix; everything else is the shared mapping. */
function recipientError(f: HubFailure, to: string, a: AgentAccess, command: string): CodedError {
  if (f.kind === 'http' && f.code === 'recipient_not_found') {
    return {
      code: f.code,
      exit: EXIT.noSession,
      message: `there is no such recipient in this account: ${to} (${f.message}); check the address against \`oh-hai fleet ls\`, or address the agent's principal mailbox agent:<id>`,
    };
  }
  if (f.kind === 'http' && f.status === 410) {
    const state = typeof f.details.state === 'string' ? f.details.state.replace(/_/g, ' ') : f.code;
    return {
      code: f.code,
      exit: EXIT.noSession,
      message:
        `${to} is ${state}: that run's session has ended, so its address takes no more mail (${f.message}). ` +
        `Address a live session from \`oh-hai fleet ls\`, or the agent's principal address agent:<id>, which whichever live session claims it first receives`,
    };
  }
  return hubFailureError(f, failureContext(a, `${command} to ${to}`));
}
