import type { Coded } from '../../core/index.js';
import type { Session } from '../../hub/contract/index.js';
import { isSameProcessAlive, spooledPastStoodDown, spooledSession, type ConsumerRecord, type RecordRead, type SessionRecord } from '../../spool/index.js';
import { leaseEpilogue, plain } from '../../reader/index.js';
import { openThisEntry, type AgentAccess, type ThisSession } from './access.js';
import { hubFailureError } from './failures.js';
import type { MessagingKnobs } from './access.js';
import { annotateStateDir, type LocalAnnotation } from './local-state.js';
import { failureContext } from './send.js';

export interface StatusView {
  session_id: string;
  /** The Hub's record: the authority on the session's state. Its instants are the Hub's clock. */
  hub: Session | null;
  hub_error: string | null;
  /** This host's record: `expires_at` as last seen (the Hub's clock), `renewed_at` and ages on our clock. */
  local: { record: SessionRecord | null; annotation: LocalAnnotation } | null;
}

export interface SessionStatus {
  view: StatusView;
  /**
   * This host's records, for the lease epilogue; null when there is no state dir here. `recorded`
   * is session.json as read, `session` it when it records the session shown (else absent), `dir`
   * the entry, where the epilogue follows the spool past `recorded` as the bridge's does.
   */
  records: { session: RecordRead<SessionRecord>; recorded: RecordRead<SessionRecord>; consumer: RecordRead<ConsumerRecord>; dir: string } | null;
}

/**
 * The Hub's view of this agent session's session (the authority) beside this host's record:
 * `oh-hai session status` and the MCP `oh_hai_status` tool. A Hub that does not know the
 * session is a view with `hub: null`, not an error; any other Hub failure is, and so is a
 * state entry the open refuses.
 */
export async function sessionStatus(
  a: AgentAccess,
  ts: Extract<ThisSession, { kind: 'attached' }>,
  knobs: MessagingKnobs,
  nowMs: number,
): Promise<Coded<SessionStatus>> {
  const entry = openThisEntry(ts.stateDirPath);
  if (!entry.ok) return entry;
  const stateDir = entry.value;
  const got = await a.client.getSession(ts.id);
  const failure = got.ok ? null : got.failure;
  if (failure && !(failure.kind === 'http' && failure.status === 404))
    return { ok: false, error: hubFailureError(failure, failureContext(a, `reading session ${ts.id}`)) };
  const recorded = stateDir?.read('session');
  // session.json a step behind the spool (`ts` is the session the spool names): it records another session, not this one.
  const session: RecordRead<SessionRecord> | undefined = recorded?.state === 'ok' && recorded.value.id !== ts.id ? { state: 'absent' } : recorded;
  const records = stateDir && session && recorded ? { session, recorded, consumer: stateDir.read('consumer'), dir: stateDir.dir } : null;
  const view: StatusView = {
    session_id: ts.id,
    hub: got.ok ? got.value : null,
    hub_error: failure?.kind === 'http' ? `${failure.status} ${failure.code}: ${failure.message}` : null,
    local: stateDir
      ? {
          record: records?.session.state === 'ok' ? records.session.value : null,
          annotation: annotateStateDir(stateDir.dir, { nowMs, staleMs: knobs.staleHolderSeconds * 1000, liveness: isSameProcessAlive }),
        }
      : null,
  };
  return { ok: true, value: { view, records } };
}

/** The lease epilogue of this host's records, under `name` (the Hub's instant verbatim, the renewal age on our clock). */
export function statusEpilogue(s: SessionStatus, name: string, nowMs: number): string[] {
  if (s.records === null) return [];
  const { consumer, recorded, dir } = s.records;
  const view = { record: consumer, alive: consumer.state === 'ok' ? isSameProcessAlive(consumer.value) : 'unknown' } as const;
  // A state dir is one key's, pinned or not: a pinned session is never replaced, so nothing is spooled past one stood down.
  return leaseEpilogue(
    name,
    recorded,
    view,
    nowMs,
    (from) => spooledSession(dir, from),
    () => spooledPastStoodDown(dir),
  );
}

function hubLines(v: StatusView): string[] {
  const s = v.hub;
  if (!s) return [`at the Hub (the authority): could not be read — ${v.hub_error ?? 'no answer'}`];
  const holder = s.holder
    ? ` · held by pid ${s.holder.pid} on ${plain(s.holder.host)}${s.holder.since ? ` since ${s.holder.since}` : ''}${s.holder.last_seen_at ? `, last seen ${s.holder.last_seen_at}` : ''}`
    : ' · no consumer holds it';
  const closed = s.closed_at ? ` · closed at ${s.closed_at}` : '';
  return [
    `at the Hub (the authority; every instant is the Hub's clock): ${s.state} · lease ${s.lease_seconds} s · expires ${s.expires_at} · last renewed ${s.last_renewed_at} · created ${s.created_at}${closed}${holder}`,
  ];
}

function localLines(v: StatusView, epilogue: string[]): string[] {
  if (!v.local) return ['on this host: no state entry for this agent session'];
  const a = v.local.annotation;
  const reader =
    a.reader_attending === true
      ? 'reader attending'
      : a.reader_attending === null
        ? `reader unknown (${a.reader_note})`
        : `reader not attending (${a.reader_note})`;
  const lag = a.lag === null ? 'unread unknown' : `${a.lag} unread`;
  return [...epilogue, `on this host: ${reader} · ${lag} · state entry ${a.entry}`];
}

/** The Hub's line, the lease epilogue and this host's line: `oh-hai session status`'s text and `oh_hai_status`'s. */
export const statusLines = (v: StatusView, epilogue: string[]): string[] => [...hubLines(v), ...localLines(v, epilogue)];
