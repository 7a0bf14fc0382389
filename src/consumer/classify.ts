import { EXIT } from '../core/index.js';
import type { ClosedReason } from '../hub/contract/index.js';
import type { HubFailure } from '../hub/client/index.js';
import { stop, type Stop } from './stops.js';

/**
 * What a failed Hub call means for the consumer (MA2H §0's table). Only genuine faults
 * spend the retry budget; decisions (auth, kill-switch, stand-down, a held session) stop
 * at once, and an unpinned session's lapse is replaced without stopping.
 */
export type Disposition =
  | { kind: 'stop'; stop: Stop }
  | { kind: 'fault'; message: string; retryAfterSeconds: number | null }
  | { kind: 'reregister'; reason: 'session_lapsed' | 'session_not_found'; message: string };

export interface FailureContext {
  /** What we were doing, e.g. "stream connect", "drain", "ack". */
  operation: string;
  /** The session presented, if any. */
  sessionId: string | null;
  /** The pinned session id (`sess_…` named by the user), null when unpinned or on the principal leg. */
  pinned: string | null;
}

const FIX_AUTH = 'a human must fix the credential (`oh-hai login --token-stdin < token-file`, or export OH_HAI_TOKEN); re-running will not help';

export function describeFailure(f: HubFailure): string {
  switch (f.kind) {
    case 'http':
      return `HTTP ${f.status} ${f.code}: ${f.message}`;
    case 'network':
      return `network error: ${f.message}`;
    case 'protocol':
      return `the Hub's answer did not follow MA2H: ${f.message}`;
  }
}

function holderText(details: Record<string, unknown>): string {
  const h = details.holder;
  if (typeof h !== 'object' || h === null) return 'the Hub did not name the holder';
  const o = h as Record<string, unknown>;
  const part = (k: string) => (typeof o[k] === 'string' || typeof o[k] === 'number' ? String(o[k]) : '?');
  return (
    `held by pid ${part('pid')} on host ${part('host')} (home ${part('home')}), ` +
    `holding since ${part('since')} and last seen ${part('last_seen_at')} (Hub's clock)`
  );
}

export function classifyFailure(f: HubFailure, ctx: FailureContext): Disposition {
  const said = `${where(ctx)}: ${describeFailure(f)}`;
  if (f.kind === 'http') {
    const decided = decideByCode(f.code, said, ctx, f.details);
    if (decided) return decided;
  }
  // Network, 429, 5xx, a malformed answer and anything unforeseen: retrying is the only
  // move that can help, and the budget bounds it (too_many_sessions included: MA2H calls
  // it a 13-class fault).
  return { kind: 'fault', message: said, retryAfterSeconds: f.kind === 'http' ? f.retryAfterSeconds : null };
}

const where = (ctx: FailureContext): string => `${ctx.operation}${ctx.sessionId ? ` on ${ctx.sessionId}` : ''}`;

/**
 * The decisions MA2H §0 attaches to an error code (or to the matching `closed` event, or
 * a session read in that state); null for codes that are faults.
 */
export function decideByCode(code: string, said: string, ctx: FailureContext, details: Record<string, unknown>): Disposition | null {
  const halt = (s: Stop): Disposition => ({ kind: 'stop', stop: s });
  switch (code) {
    case 'unauthorized':
      return halt(stop(EXIT.auth, 'unauthorized', `${said} — the credential is missing, unknown or revoked; ${FIX_AUTH}`));
    case 'messaging_disabled':
      return halt(
        stop(
          EXIT.auth,
          'messaging_disabled',
          `${said} — agent messaging is switched off for this account; a human must turn on Settings → Agent messaging, then re-run`,
        ),
      );
    case 'forbidden':
      return halt(stop(EXIT.auth, 'forbidden', `${said} — this is not an agent token; ${FIX_AUTH}`));
    case 'session_closed_by_operator':
      return halt(
        stop(
          EXIT.operatorClosed,
          'session_closed_by_operator',
          `${said} — a human closed this session (the operator kill-switch); do not re-run and do not start a replacement session until a human lifts the stop: ${
            ctx.pinned === null
              ? 'the first oh-hai bridge after the lift registers a new session (a new address) by itself'
              : `the pinned session ${ctx.pinned} stays closed after the lift, so then clear or repoint --session / MA2H_SESSION_ID`
          }`,
        ),
      );
    case 'session_held':
      return halt(
        stop(
          EXIT.held,
          'session_held',
          `${said} — another home already drains this session, ${holderText(details)}. Do not kill it: give each agent its own --session <name>, or export MA2H_AGENT_SESSION_ID per agent`,
        ),
      );
    case 'session_closed':
      return halt(
        stop(
          EXIT.stoodDown,
          'session_closed',
          `${said} — this agent stood the session down (oh-hai session close); ${
            ctx.pinned === null
              ? 'run again only if this run should have a new address'
              : `the pinned session ${ctx.pinned} stays closed: clear or repoint --session / MA2H_SESSION_ID before running again, or it exits 15 again`
          }`,
        ),
      );
    case 'session_not_found':
      if (ctx.pinned === null) return { kind: 'reregister', reason: 'session_not_found', message: said };
      return halt(
        stop(
          EXIT.noSession,
          'session_not_found',
          `${said} — the pinned session ${ctx.pinned} does not exist for this agent; check --session / MA2H_SESSION_ID against oh-hai fleet ls, or drop it`,
        ),
      );
    case 'session_lapsed':
      if (ctx.pinned === null) return { kind: 'reregister', reason: 'session_lapsed', message: said };
      return halt(pinnedLapsed(ctx.pinned, said));
    default:
      return null;
  }
}

export function pinnedLapsed(pinned: string, said: string): Stop {
  return stop(
    EXIT.pinnedLapsed,
    'session_lapsed',
    `${said} — the pinned session ${pinned} is terminal (its lease lapsed); clear or repoint --session / MA2H_SESSION_ID before re-running, or it exits 11 again`,
  );
}

const CLOSED_CODES: Record<Exclude<ClosedReason, 'replaced'>, string> = {
  closed: 'session_closed',
  closed_by_operator: 'session_closed_by_operator',
  lapsed: 'session_lapsed',
};

/** The error code MA2H uses for presenting a session in this terminal state. */
export const endedCode = (state: 'lapsed' | 'closed' | 'closed_by_operator'): string => CLOSED_CODES[state];

/** An `event: closed` on a held stream: the same decision as the matching error code. */
export function classifyClosed(reason: ClosedReason, ctx: FailureContext): Disposition {
  const said = `${where(ctx)}: the Hub ended the stream (event closed, reason ${reason})`;
  if (reason === 'replaced') {
    return {
      kind: 'stop',
      stop: stop(EXIT.ok, 'replaced', `${said} — another consumer of this same home took the session over; it is the one draining now`),
    };
  }
  return decideByCode(CLOSED_CODES[reason], said, ctx, {}) ?? { kind: 'fault', message: said, retryAfterSeconds: null };
}
