import type { HubFailure, HubResult } from '../../hub/client/index.js';
import type { SentMessage } from '../../hub/contract/index.js';
import { formatDelay } from '../../util/duration.js';
import type { AgentAccess } from './access.js';
import type { MessagingKnobs } from './access.js';
import { SEND_RETRIES, withRetries } from './retry.js';
import type { ReplyRoute } from './send-lines.js';

/** Where a sending operation says what it is doing (retries, a dropped session): a command's stderr, the MCP server's. */
export type Say = (line: string) => void;

/** Codes with which the Hub refuses a session the SENDER presented (a recipient's are recipient_not_found and 410). */
const OWN_SESSION_CODES = new Set(['session_not_found', 'session_lapsed', 'session_closed', 'session_closed_by_operator']);

export type Attempt = 'first' | 'unattached';

export type Sent = { ok: true; value: SentMessage; route: ReplyRoute; attempts: number } | { ok: false; failure: HubFailure; attempts: number };

/**
 * Run a send or respond with this agent session attached when it has one (so answers
 * reach the run that is reading), retrying transient failures — the caller keeps one
 * idempotency key per body. If the Hub refuses the attached session itself (the record
 * names a session that has since ended), it goes again without one — answers then go
 * to the principal mailbox, which any live bridge of this agent also drains — and says so.
 */
export async function withThisSession(
  a: AgentAccess,
  knobs: MessagingKnobs,
  say: Say,
  op: (session: string | undefined, attempt: Attempt) => Promise<HubResult<SentMessage>>,
): Promise<Sent> {
  const retrying = (session: string | undefined, attempt: Attempt) =>
    withRetries(() => op(session, attempt), {
      retries: SEND_RETRIES,
      backoffMinMs: knobs.backoffMinMs,
      backoffMaxMs: knobs.backoffMaxMs,
      onRetry: (n, delayMs, why) => say(`attempt ${n} failed (${why}); retrying in ${formatDelay(delayMs)}`),
    });
  const settle = (r: HubResult<SentMessage> & { attempts: number }, route: ReplyRoute): Sent =>
    r.ok ? { ok: true, value: r.value, route, attempts: r.attempts } : { ok: false, failure: r.failure, attempts: r.attempts };
  const principal = (why: string): ReplyRoute => ({ kind: 'principal', address: a.principalAddress, why });

  const ts = a.thisSession;
  if (ts.kind === 'none') return settle(await retrying(undefined, 'first'), principal(ts.why));
  const r = await retrying(ts.id, 'first');
  if (r.ok || !(await ownSessionRefused(a, r.failure, ts.id))) return settle(r, { kind: 'session', address: ts.address });
  const what = r.failure.kind === 'http' ? `${r.failure.status} ${r.failure.code}` : r.failure.message;
  const why = `this agent session's recorded session ${ts.id} is no longer live at the Hub (${what})`;
  say(`${why}; going without it — ${nextRun(r.failure)}`);
  return settle(await retrying(undefined, 'unattached'), principal(why));
}

/**
 * What becomes of the agent session's address. A human's kill-switch is not a lapse: the bridge
 * exits 14 on it and must not be replaced, so the send must not promise that a re-run registers one.
 */
const nextRun = (f: HubFailure): string =>
  f.kind === 'http' && f.code === 'session_closed_by_operator'
    ? 'a human closed it (the operator kill-switch): do not start a replacement session; answers go to your principal mailbox'
    : 'the next `oh-hai bridge` run registers a new one';

/** A session code is ambiguous between sender and recipient (410 session_lapsed names either): the Hub's record of ours decides. */
async function ownSessionRefused(a: AgentAccess, f: HubFailure, own: string): Promise<boolean> {
  if (f.kind !== 'http' || !OWN_SESSION_CODES.has(f.code)) return false;
  const s = await a.client.getSession(own);
  if (s.ok) return s.value.state !== 'active';
  return s.failure.kind === 'http' && s.failure.status === 404;
}
