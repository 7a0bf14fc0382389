import type { ConsumerIdentity, CreateSessionRequest, Session, SessionLease, SessionState } from '../contract/index.js';
import { formatAddress, sessionEndedCode } from '../contract/index.js';
import { HUB_DEFAULTS, clampLease } from './config.js';
import type { HubCore } from './core.js';
import { moveToPrincipal, releaseClaims, setEntryState, type EntryRow } from './entries.js';
import { bad, good, type Answer } from './http.js';
import { iso, newId } from './ids.js';
import type { OpenStream, StreamCloseReason } from './registry.js';
import { markUndeliverable, type EndReason } from './track.js';

export interface SessionRow {
  id: string;
  agent_id: string;
  name: string | null;
  client_key: string;
  home: string | null;
  state: SessionState;
  lease_seconds: number;
  expires_at: number;
  last_renewed_at: number;
  created_at: number;
  closed_at: number | null;
  seen_at: number | null;
  holder_home: string | null;
  holder_host: string | null;
  holder_pid: number | null;
  holder_since: number | null;
  holder_seen_at: number | null;
}

export function sessionById(core: HubCore, id: string): SessionRow | null {
  return (core.db.prepare('SELECT * FROM sessions WHERE id = ?').get(id) as SessionRow | undefined) ?? null;
}

function holderJson(r: SessionRow): Session['holder'] {
  if (r.holder_home === null || r.holder_host === null || r.holder_pid === null) return null;
  return {
    home: r.holder_home,
    host: r.holder_host,
    pid: r.holder_pid,
    since: r.holder_since === null ? null : iso(r.holder_since),
    last_seen_at: r.holder_seen_at === null ? null : iso(r.holder_seen_at),
  };
}

export function sessionView(r: SessionRow): Session {
  return {
    id: r.id,
    agent_id: r.agent_id,
    address: formatAddress(r.agent_id, r.id),
    name: r.name,
    state: r.state,
    lease_seconds: r.lease_seconds,
    expires_at: iso(r.expires_at),
    last_renewed_at: iso(r.last_renewed_at),
    created_at: iso(r.created_at),
    closed_at: r.closed_at === null ? null : iso(r.closed_at),
    holder: holderJson(r),
  };
}

export const leaseView = (r: SessionRow): SessionLease => ({ id: r.id, expires_at: iso(r.expires_at), lease_seconds: r.lease_seconds });

/** The refusal for presenting a session that has ended (§0, §12). */
export function endedError<T>(r: SessionRow): Answer<T> {
  const state = r.state as Exclude<SessionState, 'active'>;
  const status = state === 'closed_by_operator' ? 403 : 410;
  const what = {
    lapsed: `session ${r.id} lapsed: its lease ran out at ${iso(r.expires_at)} (Hub's clock); register a new session`,
    closed: `session ${r.id} was closed by its agent`,
    closed_by_operator: `session ${r.id} was closed by a human (the operator kill-switch); do not re-register until a human lifts the stop`,
  }[state];
  return bad(status, sessionEndedCode(state), what, { state });
}

/** Whether the holder still counts as seen: an open stream from its home, or a connect within the stale window. */
function holderSeen(core: HubCore, r: SessionRow, now: number): boolean {
  if (r.holder_home === null) return false;
  if (core.streams.heldBy(r.id, r.holder_home)) return true;
  return r.holder_seen_at !== null && now - r.holder_seen_at < core.config.holderStaleSeconds * 1000;
}

const heldError = <T>(r: SessionRow): Answer<T> =>
  bad(409, 'session_held', `session ${r.id} is held by the consumer of another home (pid ${r.holder_pid} on ${r.holder_host})`, {
    holder: holderJson(r),
  });

/** Lapse every active session whose lease the Hub's clock has passed; their mail bounces. */
export function sweepLapsed(core: HubCore): void {
  const due = core.db.prepare(`SELECT * FROM sessions WHERE state = 'active' AND expires_at <= ?`).all(core.clock.now()) as SessionRow[];
  for (const r of due) endSession(core, r, 'lapsed');
}

/** The session as it stands on the Hub's clock now: an active row whose lease has passed lapses first. */
export function current(core: HubCore, r: SessionRow): SessionRow {
  return r.state === 'active' && r.expires_at <= core.clock.now() ? endSession(core, r, 'lapsed') : r;
}

/** Read a session of this agent after applying any lapse that is due. */
function ownSession(core: HubCore, agentId: string, id: string): Answer<SessionRow> {
  const r = sessionById(core, id);
  if (!r || r.agent_id !== agentId) return bad(404, 'session_not_found', `no session ${id} for agent ${agentId}`);
  return good(current(core, r));
}

/** `GET /v1/sessions/:id`: the authority on a session's state; does not renew. */
export const getSession = (core: HubCore, agentId: string, id: string): Answer<SessionRow> => ownSession(core, agentId, id);

export interface Presenting {
  /** The MA2H-Consumer of a drain or stream connect; null for acks, sends and non-consumers. */
  consumer: ConsumerIdentity | null;
  /** A drain or connect (touches presence); false for acks and sends. */
  connect: boolean;
  /** The stream making this connect, so it is not superseded by itself. */
  stream?: OpenStream | null;
}

/**
 * Present a session (§3): it must be this agent's and active; the lease is renewed. A
 * consumer connect applies the one-consumer rule (§4, §12): a live holder of another home
 * is 409, the holder's own home replaces it.
 */
export function presentSession(core: HubCore, agentId: string, id: string, p: Presenting): Answer<SessionRow> {
  return core.db.transaction((): Answer<SessionRow> => {
    const found = ownSession(core, agentId, id);
    if (!found.ok) return found;
    const r = found.value;
    if (r.state !== 'active') return endedError(r);
    const now = core.clock.now();
    let replaced = false;
    if (p.consumer) {
      const c = p.consumer;
      if (r.holder_home !== null && r.holder_home !== c.home && holderSeen(core, r, now)) return heldError(r);
      const newHolder = r.holder_home !== c.home || r.holder_pid !== c.pid;
      replaced = newHolder && r.holder_home !== null;
      core.db
        .prepare('UPDATE sessions SET holder_home = ?, holder_host = ?, holder_pid = ?, holder_since = ?, holder_seen_at = ? WHERE id = ?')
        .run(c.home, c.host, c.pid, newHolder ? now : r.holder_since, now, r.id);
    }
    core.db
      .prepare(`UPDATE sessions SET expires_at = ?, last_renewed_at = ?, seen_at = CASE WHEN ? THEN ? ELSE seen_at END WHERE id = ?`)
      .run(now + r.lease_seconds * 1000, now, p.connect ? 1 : 0, now, r.id);
    const consumer = p.consumer;
    if (consumer && (replaced || p.stream)) core.commits.afterCommit(() => core.streams.supersede(r.id, consumer, p.stream ?? null));
    return good(sessionById(core, r.id)!);
  })();
}

/** A stream ended: the session, and its holder if the stream was the holder's, were seen until now. */
export function streamEnded(core: HubCore, id: string, consumerHome: string | null): void {
  const now = core.clock.now();
  core.db.prepare('UPDATE sessions SET seen_at = ? WHERE id = ?').run(now, id);
  if (consumerHome !== null) core.db.prepare('UPDATE sessions SET holder_seen_at = ? WHERE id = ? AND holder_home = ?').run(now, id, consumerHome);
}

export interface Registered {
  status: 200 | 201;
  row: SessionRow;
}

function stopFor(core: HubCore, agentId: string, clientKey: string, name: string | undefined): boolean {
  const row = core.db
    .prepare('SELECT 1 FROM operator_stops WHERE agent_id = ? AND (client_key = ? OR (? IS NOT NULL AND name = ?)) LIMIT 1')
    .get(agentId, clientKey, name ?? null, name ?? null);
  return row !== undefined;
}

/**
 * `POST /v1/sessions` (§3, §12): only `name` adopts, and only from the holder's home;
 * a stale holder's named session is taken over; `client_key` alone always creates.
 */
export function registerSession(core: HubCore, agentId: string, req: CreateSessionRequest): Answer<Registered> {
  sweepLapsed(core);
  return core.db.transaction((): Answer<Registered> => {
    if (stopFor(core, agentId, req.client_key, req.name)) {
      return bad(
        403,
        'session_closed_by_operator',
        `a human closed this agent session's mailbox (client_key or name matches an operator stop); do not re-register until a human lifts it (oh-hai hub lift --agent ${agentId})`,
      );
    }
    const now = core.clock.now();
    const lease = clampLease(core.config, req.lease_seconds);
    const holder =
      req.home !== undefined && req.host !== undefined && req.pid !== undefined ? { home: req.home, host: req.host, pid: req.pid } : null;
    if (req.name !== undefined) {
      const live = core.db.prepare(`SELECT * FROM sessions WHERE agent_id = ? AND name = ? AND state = 'active'`).get(agentId, req.name) as
        | SessionRow
        | undefined;
      if (live) {
        const ownerHome = live.holder_home ?? live.home;
        const sameHome = ownerHome === (req.home ?? null);
        if (!sameHome && holderSeen(core, live, now)) return heldError(live);
        if (sameHome) {
          core.db
            .prepare('UPDATE sessions SET lease_seconds = ?, expires_at = ?, last_renewed_at = ?, client_key = ? WHERE id = ?')
            .run(lease, now + lease * 1000, now, req.client_key, live.id);
        } else {
          core.db
            .prepare(
              `UPDATE sessions SET lease_seconds = ?, expires_at = ?, last_renewed_at = ?, client_key = ?, home = ?,
                 holder_home = ?, holder_host = ?, holder_pid = ?, holder_since = ?, holder_seen_at = ? WHERE id = ?`,
            )
            .run(lease, now + lease * 1000, now, req.client_key, req.home ?? null, holder?.home ?? null, holder?.host ?? null, holder?.pid ?? null, holder ? now : null, holder ? now : null, live.id);
          core.commits.afterCommit(() => core.streams.closeSession(live.id, 'replaced'));
        }
        return good({ status: 200, row: sessionById(core, live.id)! });
      }
    }
    const live = (core.db.prepare(`SELECT COUNT(*) AS n FROM sessions WHERE agent_id = ? AND state = 'active'`).get(agentId) as { n: number }).n;
    if (live >= HUB_DEFAULTS.maxLivePerAgent) {
      return bad(
        409,
        'too_many_sessions',
        `agent ${agentId} already has ${live} live sessions (the limit is ${HUB_DEFAULTS.maxLivePerAgent}); close one (oh-hai session close) or let one lapse`,
        { limit: HUB_DEFAULTS.maxLivePerAgent },
      );
    }
    const id = newId('sess');
    core.db
      .prepare(
        `INSERT INTO sessions (id, agent_id, name, client_key, home, state, lease_seconds, expires_at, last_renewed_at, created_at,
           closed_at, seen_at, holder_home, holder_host, holder_pid, holder_since, holder_seen_at)
         VALUES (?, ?, ?, ?, ?, 'active', ?, ?, ?, ?, NULL, NULL, ?, ?, ?, ?, ?)`,
      )
      .run(id, agentId, req.name ?? null, req.client_key, req.home ?? null, lease, now + lease * 1000, now, now, holder?.home ?? null, holder?.host ?? null, holder?.pid ?? null, holder ? now : null, holder ? now : null);
    return good({ status: 201, row: sessionById(core, id)! });
  })();
}

/** `POST /v1/sessions/:id/close` by its agent; idempotent, and a terminal session comes back unchanged. */
export function closeSession(core: HubCore, agentId: string, id: string): Answer<SessionRow> {
  const found = ownSession(core, agentId, id);
  if (!found.ok || found.value.state !== 'active') return found;
  return good(endSession(core, found.value, 'closed'));
}

/** The operator kill-switch (§9): closed_by_operator, mail bounces, a stop is recorded for (agent, client_key) and (agent, name). */
export function operatorClose(core: HubCore, id: string): Answer<SessionRow> {
  const r = sessionById(core, id);
  if (!r) return bad(404, 'session_not_found', `no session ${id} in this account`);
  if (current(core, r).state !== 'active') return good(sessionById(core, id)!);
  return core.db.transaction((): Answer<SessionRow> => {
    core.db
      .prepare('INSERT INTO operator_stops (agent_id, client_key, name, session_id, created_at) VALUES (?, ?, ?, ?, ?)')
      .run(r.agent_id, r.client_key, r.name, r.id, core.clock.now());
    return good(endSession(core, r, 'closed_by_operator'));
  })();
}

export interface OperatorStopRow {
  agent_id: string;
  client_key: string | null;
  name: string | null;
  session_id: string | null;
  created_at: number;
}

export const listOperatorStops = (core: HubCore): OperatorStopRow[] =>
  core.db.prepare('SELECT agent_id, client_key, name, session_id, created_at FROM operator_stops ORDER BY seq').all() as OperatorStopRow[];

/** Lift operator stops of one agent: those matching client_key or name, or all of them when neither is given. */
export function liftStops(core: HubCore, agentId: string, clientKey: string | undefined, name: string | undefined): number {
  if (clientKey === undefined && name === undefined) {
    return core.db.prepare('DELETE FROM operator_stops WHERE agent_id = ?').run(agentId).changes;
  }
  return core.db
    .prepare('DELETE FROM operator_stops WHERE agent_id = ? AND ((? IS NOT NULL AND client_key = ?) OR (? IS NOT NULL AND name = ?))')
    .run(agentId, clientKey ?? null, clientKey ?? null, name ?? null, name ?? null).changes;
}

const END_REASON: Record<Exclude<SessionState, 'active'>, EndReason> = {
  lapsed: 'session_lapsed',
  closed: 'session_closed',
  closed_by_operator: 'session_closed_by_operator',
};

/**
 * A session stopped: its unacknowledged mail bounces (receipts to senders), receipts
 * waiting in it move to the agent's principal mailbox (they cannot bounce), its claimed principal entries are
 * released, and an open stream gets `event: closed`.
 */
function endSession(core: HubCore, r: SessionRow, state: Exclude<SessionState, 'active'>): SessionRow {
  const ended = core.db.transaction((): SessionRow => {
    const closedAt = state === 'lapsed' ? r.expires_at : core.clock.now();
    core.db.prepare('UPDATE sessions SET state = ?, closed_at = ? WHERE id = ?').run(state, closedAt, r.id);
    const waiting = core.db.prepare(`SELECT * FROM entries WHERE to_session = ? AND state = 'pending' ORDER BY seq`).all(r.id) as EntryRow[];
    for (const e of waiting) {
      if (e.message_id !== null) {
        setEntryState(core, e.id, 'bounced');
        markUndeliverable(core, e.message_id, END_REASON[state]);
      } else {
        moveToPrincipal(core, e);
      }
    }
    releaseClaims(core, r.id, r.agent_id);
    return sessionById(core, r.id)!;
  })();
  core.commits.afterCommit(() => core.streams.closeSession(r.id, state as StreamCloseReason));
  return ended;
}
