import type { ConsumerIdentity, CreateSessionRequest, Session, SessionLease, SessionState } from '../contract/index.js';
import { formatAddress, sessionEndedCode } from '../contract/index.js';
import { HUB_DEFAULTS, clampLease } from './config.js';
import { AGENT_LET_IN } from './auth.js';
import type { HubCore } from './core.js';
import {
  moveToPrincipal,
  pagesOf,
  pagesQuery,
  releaseClaims,
  setEntryState,
  type EntryRow,
  type PageBound,
  type PageRequest,
  type PageRow,
  type PendingPage,
} from './entries.js';
import { bad, good, type Answer } from './http.js';
import { iso, newId } from './ids.js';
import type { OpenStream, StreamCloseReason } from './registry.js';
import { bindNow, type Param, type Sql, type Store, type Tx } from './sql.js';
import { ConnectBatcher, consumerValues } from './connects.js';
import { markUndeliverable, type EndReason } from './track.js';
import type { Work } from './work.js';
import { TRACE, hop } from '../../util/trace.js';

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

/** The session, row-locked when read inside a unit that decides from it (lease, holder, end). */
export const sessionById = (q: Sql, id: string, lock = false): Promise<SessionRow | null> =>
  q.get<SessionRow>(`SELECT * FROM sessions WHERE id = ?${lock ? ' FOR UPDATE' : ''}`, id);

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

export const leaseView = (r: SessionLeaseRow): SessionLease => ({ id: r.id, expires_at: iso(r.expires_at), lease_seconds: r.lease_seconds });

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

/**
 * Whether the holder still counts as seen: an open stream from its home on this instance,
 * or a connect within the stale window (on a shared store, instances holding a stream
 * refresh `holder_seen_at` well within it, so a stream on another instance counts too).
 */
function holderSeen(core: HubCore, r: SessionRow, now: number): boolean {
  if (r.holder_home === null) return false;
  if (core.streams.heldBy(r.id, r.holder_home)) return true;
  return r.holder_seen_at !== null && now - r.holder_seen_at < core.config.holderStaleSeconds * 1000;
}

const heldError = <T>(r: SessionRow): Answer<T> =>
  bad(409, 'session_held', `session ${r.id} is held by the consumer of another home (pid ${r.holder_pid} on ${r.holder_host})`, {
    holder: holderJson(r),
  });

/** Lapse every active session whose lease the deployment's clock has passed; their mail bounces. */
export async function sweepLapsed(core: HubCore, tx: Tx): Promise<void> {
  const due = await tx.all<SessionRow>(`SELECT * FROM sessions WHERE state = 'active' AND expires_at <= ?`, tx.now);
  for (const r of due) await endSession(core, tx, r, 'lapsed');
}

/** The session as it stands on the deployment's clock now: an active row whose lease has passed lapses first. */
export async function current(core: HubCore, tx: Tx, r: SessionRow): Promise<SessionRow> {
  return r.state === 'active' && r.expires_at <= tx.now ? endSession(core, tx, r, 'lapsed') : r;
}

/** Read a session of this agent after applying any lapse that is due. */
async function ownSession(core: HubCore, tx: Tx, agentId: string, id: string, lock = false): Promise<Answer<SessionRow>> {
  const r = await sessionById(tx, id, lock);
  if (!r || r.agent_id !== agentId) return bad(404, 'session_not_found', `no session ${id} for agent ${agentId}`);
  return good(await current(core, tx, r));
}

/** `GET /v1/sessions/:id`: the authority on a session's state; does not renew. */
export const getSession = (core: HubCore, tx: Tx, agentId: string, id: string): Promise<Answer<SessionRow>> => ownSession(core, tx, agentId, id);

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
 * is 409, the holder's own home replaces it. The session row is locked for the unit, so
 * two consumers racing on two instances are decided one after the other.
 *
 * The common case — an active, unexpired session presented by its holder (or with no holder
 * yet) — is ONE conditional UPDATE … RETURNING: its WHERE is the whole check, its row lock
 * the race. Anything else (another holder, a pid change, a lapse due, a wrong id) misses it
 * and takes the full path below. A stream reconnects once per hold, so at 10,000 streams
 * this statement count is what bounds the deployment (docs/deploy.md "Round trips").
 */
export async function presentSession(core: HubCore, tx: Tx, agentId: string, id: string, p: Presenting): Promise<Answer<SessionRow>> {
  const held = renewIfHeld({ sql: '?', params: [agentId] }, id, p);
  const renewed = await tx.get<SessionRow>(...inUnit(tx, held));
  if (renewed !== null) {
    registerStream(core, (effect) => tx.afterCommit(effect), renewed, p, false);
    return good(renewed);
  }
  const found = await ownSession(core, tx, agentId, id, true);
  if (!found.ok) return found;
  const r = found.value;
  if (r.state !== 'active') return endedError(r);
  const c = p.consumer;
  if (c && r.holder_home !== null && r.holder_home !== c.home && holderSeen(core, r, tx.now)) return heldError(r);
  const replaced = c !== null && r.holder_home !== null && (r.holder_home !== c.home || r.holder_pid !== c.pid);
  const row = await tx.get<SessionRow>(...inUnit(tx, renewal(r.id, p, c !== null && (r.holder_home !== c.home || r.holder_pid !== c.pid), '*', '')));
  // A stream of the old holder may be open on another instance.
  if (replaced) tx.wake('session', r.id);
  registerStream(core, (effect) => tx.afterCommit(effect), row!, p, replaced);
  return good(row!);
}

/**
 * Who presents a session: an agent let in already, or the hash of the token presented, let in by
 * the renewal statement itself ({@link AGENT_LET_IN}: the credential read folded into it).
 */
export type Presenter = { agentId: string } | { tokenHash: string };

/**
 * A stream connect's present in ONE statement of its own (`Store.once`): the common case of
 * {@link presentSession} (an active, unexpired session of this agent presented by its holder or
 * with none), which on PostgreSQL is one round trip instead of a unit's three. Presented by a
 * token, the same statement lets the token in: the credential and the renewal in one round trip,
 * where they were two. Null when it misses (any refusal, of the token or of the session, or a
 * case the locked path decides): the connect then lets the caller in as any request is
 * (authenticate) and takes presentSession in a unit, which decides and words the refusal.
 */
export async function presentStream(
  core: HubCore,
  store: Pick<Store, 'once'>,
  who: Presenter,
  id: string,
  p: Presenting,
  first: PageBound | null,
): Promise<Presented | null> {
  const byToken = !('agentId' in who);
  const c = p.consumer;
  const values: ConnectValues = {
    agent: 'agentId' in who ? who.agentId : who.tokenHash,
    session: id,
    home: c?.home ?? null,
    host: c?.host ?? null,
    pid: c?.pid ?? null,
    limit: first?.limit ?? null,
    maxBytes: first?.maxBytes ?? null,
  };
  // A connect by its token on PostgreSQL: renewed together with the connects queued with it. A pid past the
  // column's range fails its statement, so such a connect takes its own (and fails alone).
  if (first !== null && byToken && p.connect && (c === null || c.pid <= MAX_INTEGER))
    return connectBatcher(core).present({ tokenHash: values.agent, session: id, consumer: c, bound: first, stream: p.stream ?? null });
  const statement = connectStatement(byToken, c !== null, p.connect, values, first !== null);
  if (first !== null) return presentPaged(core, store, statement, id, p, first);
  const [row] = await store.once<StreamLease>(statement.sql, statement.params, ([r]) => {
    if (r !== undefined) registerStream(core, (effect) => effect(), r, p, false);
  });
  return row === undefined ? null : { row, page: null };
}

/** The largest `holder_pid` the sessions table holds (INTEGER). */
const MAX_INTEGER = 2 ** 31 - 1;

/** The stream connect's work (its route's), as the router names it: the batched renewals' round trips count as the connects'. */
const CONNECT: Work = { name: 'GET /v1/inbox/stream', lane: 'connect' };

/** Per Hub, the stream connects renewed together (PostgreSQL). */
const connectBatchers = new WeakMap<HubCore, ConnectBatcher>();
function connectBatcher(core: HubCore): ConnectBatcher {
  let batcher = connectBatchers.get(core);
  if (batcher === undefined) {
    batcher = new ConnectBatcher(
      core.store.as(CONNECT),
      (c) =>
        connectStatement(
          true,
          c.consumer !== null,
          true,
          { agent: c.tokenHash, session: c.session, ...consumerValues(c), limit: c.bound.limit, maxBytes: c.bound.maxBytes },
          true,
        ),
      (c, sessionId) => registerStream(core, (effect) => effect(), { id: sessionId }, { consumer: c.consumer, connect: true, stream: c.stream }, false),
    );
    connectBatchers.set(core, batcher);
  }
  return batcher;
}

/**
 * A stream connect's own statement, made once per shape and bound per run: the renewal (by the token, which it
 * lets in, or by an agent let in already; for a consumer, its holder), and with `paged` its first page.
 */
function connectStatement(byToken: boolean, consumer: boolean, connect: boolean, values: ConnectValues, paged: boolean): AtNow {
  const shape = `${byToken ? 'token' : 'agent'}${consumer ? ' consumer' : ''}${connect ? ' connect' : ''}${paged ? ' paged' : ''}`;
  return connectStatements.bind(shape, values, (v) => {
    const agent = byToken ? { sql: AGENT_LET_IN, params: [v.agent] } : { sql: '?', params: [v.agent] };
    const presenting = { consumer: consumer ? { home: v.home!, host: v.host!, pid: v.pid! } : null, connect };
    return paged
      ? pagedStatement(agent, v.session, presenting, { limit: v.limit!, maxBytes: v.maxBytes! })
      : renewIfHeld(agent, v.session, presenting, LEASE_COLUMNS);
  });
}

/** What a stream connect's statement binds: every other part of its text is fixed by its shape. */
type ConnectValues = {
  agent: string;
  session: string;
  home: string | null;
  host: string | null;
  pid: number | null;
  limit: number | null;
  maxBytes: number | null;
};

/**
 * A statement made once per shape and bound per run: built the first time from stand-ins for its
 * values, which every later run replaces, by name, with its own. A stream connects once per hold
 * (~330 connects/s at 10,000 streams), and its statement built afresh each time was a new text the
 * store then looked up by hashing it whole, twice (`Store.once`'s clock and its prepared statement);
 * the text made once is one string, hashed once. The builder may only pass its values into the
 * statement's parameters, never into its text nor compute with them, and everything else its text
 * depends on must be in the shape's name.
 */
export class ShapedStatements<V extends Record<string, Param>> {
  private readonly made = new Map<string, { sql: string; params: Array<{ value: Param } | { slot: keyof V }> }>();

  bind(shape: string, values: V, build: (standIns: V) => AtNow): AtNow {
    let made = this.made.get(shape);
    if (made === undefined) {
      const standIns = Object.fromEntries(Object.keys(values).map((k) => [k, STAND_IN + k])) as unknown as V;
      const built = build(standIns);
      const slot = (p: Param): keyof V | null => (typeof p === 'string' && p.startsWith(STAND_IN) ? p.slice(STAND_IN.length) : null);
      made = { sql: built.sql, params: built.params.map((p) => (slot(p) === null ? { value: p } : { slot: slot(p)! })) };
      if (made.sql.includes(STAND_IN)) throw new Error(`shape ${shape}: a value was written into the statement's text`);
      this.made.set(shape, made);
    }
    return { sql: made.sql, params: made.params.map((p) => ('slot' in p ? values[p.slot] : p.value)) };
  }

  /** How many statements were built (a test's count). */
  get size(): number {
    return this.made.size;
  }
}
/** What no value of the Hub's begins with (a NUL). */
const STAND_IN = '\u0000stand-in:';
const connectStatements = new ShapedStatements<ConnectValues>();

/**
 * A send's {@link presentSession} (no consumer, no connect) as a renewal a statement of the send's
 * own holds (a data-modifying CTE): only when `when` holds, so a send that misses renews nothing.
 * Its rows: the {@link SessionLease} of the session renewed; none when the locked path must decide.
 */
export const presentForSend = (agentId: string, id: string, when: string): AtNow =>
  renewIfHeld({ sql: 'CAST(? AS TEXT)', params: [agentId] }, id, { consumer: null, connect: false }, LEASE_VIEW_COLUMNS, ` AND ${when}`);

/** What a send's answer tells of the session it presented (leaseView). */
export type SessionLeaseRow = Pick<SessionRow, 'id' | 'expires_at' | 'lease_seconds'>;
const LEASE_VIEW_COLUMNS = 'id, expires_at, lease_seconds';

/** What a stream connect needs of the session it renewed (the renewal returns no more: every column is parsed, every connect). */
export type StreamLease = Pick<SessionRow, 'id' | 'agent_id' | 'lease_seconds' | 'expires_at'>;
const LEASE_COLUMNS = 'id, agent_id, lease_seconds, expires_at';

/**
 * Another instance ended the session, or took it for another consumer: bring the streams open on
 * it here in line (`closed` with the reason, or `replaced`), as this instance's own end would.
 */
export async function reconcileSession(core: HubCore, sessionId: string): Promise<void> {
  if (!core.streams.isOpen(sessionId)) return;
  const r = await sessionById(core.store.read, sessionId);
  if (r === null) return;
  if (r.state !== 'active') core.streams.closeSession(sessionId, r.state as StreamCloseReason);
  else if (r.holder_home !== null && r.holder_pid !== null) core.streams.keepHolder(sessionId, { home: r.holder_home, pid: r.holder_pid });
}

/** A stream connect's renewed session, and its first page when the renewal statement read it. */
export interface Presented {
  row: StreamLease;
  page: PendingPage | null;
}

/** A {@link presentPaged} row: the lease (its id renamed beside the entry's) and an entry of the page, or none. */
type PagedRow = Omit<StreamLease, 'id'> & { session_id: string } & (PageRow | { [K in keyof PageRow]: null });

/**
 * {@link presentStream} on a store a round trip away (PostgreSQL), with the stream's first page
 * read by the same statement: the renewal as a data-modifying CTE, then the session mailbox's page
 * ({@link pagesQuery}, its principal arm on the renewed row's agent), read only when the renewal
 * took place, so the page is the holder's alone. The credential, the renewal and the first page:
 * ONE round trip where they were three. The page is of the statement's snapshot: an entry
 * committed after it wakes the stream, which records wake-ups from before the statement was sent
 * (stream.ts), so none falls between the read and its listening.
 */
function pagedStatement(agent: AtNow, id: string, p: Presenting, bound: PageBound): AtNow {
  const held = renewIfHeld(agent, id, p, `id AS session_id, agent_id, lease_seconds, expires_at`);
  const request: PageRequest = { box: { agentId: '', sessionId: id }, afterSeq: 0, bound, agent: { sql: '(SELECT agent_id FROM renewed)', params: [] } };
  const pages = pagesQuery([request], 'EXISTS (SELECT 1 FROM renewed)');
  return {
    sql: `WITH renewed AS (${held.sql}), ${pages.ctes} SELECT renewed.*, paged.* FROM renewed LEFT JOIN (${pages.select}) AS paged ON TRUE`,
    params: [...held.params, ...pages.params],
  };
}

/** {@link presentStream}'s run of its {@link pagedStatement}: the lease, and the page its rows carry. */
async function presentPaged(
  core: HubCore,
  store: Pick<Store, 'once'>,
  statement: AtNow,
  id: string,
  p: Presenting,
  bound: PageBound,
): Promise<Presented | null> {
  const rows = await store.once<PagedRow>(statement.sql, statement.params, ([r]) => {
    if (r !== undefined) registerStream(core, (effect) => effect(), { id: r.session_id }, p, false);
  });
  const [head] = rows;
  if (head === undefined) return null;
  const row = { id: head.session_id, agent_id: head.agent_id, lease_seconds: head.lease_seconds, expires_at: head.expires_at };
  const read = rows.filter((r): r is PagedRow & PageRow => r.seq !== null);
  const [page] = pagesOf(read, [{ box: { agentId: row.agent_id, sessionId: id }, afterSeq: 0, bound }]);
  return { row, page: page! };
}

/** A statement whose `?now` is the deployment's clock (see `Store.once`). */
export interface AtNow {
  sql: string;
  params: Param[];
}

/** `s` bound to the unit's clock, as `tx.get`'s arguments. */
function inUnit(tx: Tx, s: AtNow): [string, ...Param[]] {
  const bound = bindNow(s.sql, s.params, tx.now);
  return [bound.sql, ...bound.params];
}

/**
 * Renew the lease (and, for a consumer, record it as holder, seen now) in one statement,
 * returning the row. `guard` narrows which rows it touches; `newHolder` restarts `holder_since`.
 */
function renewal(id: string, p: Presenting, newHolder: boolean | 'if unheld', returning: string, guard: string, ...guardParams: Param[]): AtNow {
  const sets = ['expires_at = CAST(?now + lease_seconds * 1000 AS BIGINT)', 'last_renewed_at = ?now'];
  const params: Param[] = [];
  if (p.connect) sets.push('seen_at = ?now');
  const c = p.consumer;
  if (c) {
    sets.push('holder_home = ?', 'holder_host = ?', 'holder_pid = ?', 'holder_seen_at = ?now');
    params.push(c.home, c.host, c.pid);
    if (newHolder === 'if unheld') sets.push('holder_since = CASE WHEN holder_home IS NULL THEN ?now ELSE holder_since END');
    else if (newHolder) sets.push('holder_since = ?now');
  }
  return { sql: `UPDATE sessions SET ${sets.join(', ')} WHERE id = ?${guard} RETURNING ${returning}`, params: [...params, id, ...guardParams] };
}

/**
 * The one-statement present: only an active, unexpired session of the agent `agent` names (an id
 * parameter, or a sub-select of one), held by this consumer or by nobody; and only when `also`, a
 * condition without parameters, holds.
 */
function renewIfHeld(agent: AtNow, id: string, p: Presenting, returning = '*', also = ''): AtNow {
  const guard = ` AND agent_id = ${agent.sql} AND state = 'active' AND expires_at > ?now${also}`;
  const c = p.consumer;
  if (c === null) return renewal(id, p, false, returning, guard, ...agent.params);
  return renewal(id, p, 'if unheld', returning, `${guard} AND (holder_home IS NULL OR (holder_home = ? AND holder_pid = ?))`, ...agent.params, c.home, c.pid);
}

/**
 * Once committed: streams this consumer superseded end, and the presenting stream is registered
 * — in the unit's effects, so an end committed after it (a later unit of the same SQLite batch,
 * a NOTIFY from another instance) already finds it.
 */
function registerStream(core: HubCore, afterCommit: (effect: () => void) => void, r: Pick<SessionRow, 'id'>, p: Presenting, replaced: boolean): void {
  const consumer = p.consumer;
  const stream = p.stream ?? null;
  if (consumer && (replaced || stream)) afterCommit(() => core.streams.supersede(r.id, consumer, stream));
  if (stream)
    afterCommit(() => {
      core.streams.add(stream);
      // The renewal wrote the session (and holder) seen now: an end of it still queued says less.
      core.ends.connected(r.id);
    });
}

/**
 * Streams held open on this instance, or ended here since the last write: their sessions (and
 * holders) are seen now. On a shared store this is how other instances learn a stream is open
 * here; a stream's end is recorded so presence and the holder rule count it seen until then.
 * Each chunk's statement commits on its own (`Store.once`): in one unit, every held session's row
 * lock was kept until the last chunk's COMMIT, and each stream connect renewing one of them waited
 * for it — at 10,000 streams 300–500 ms every 20 s, with every connection of stream work's share
 * held by a waiting connect and the pages queued behind them (docs/deploy.md, session 13).
 */
export async function streamsSeen(store: Pick<Store, 'as'>, held: ReadonlyArray<{ sessionId: string; home: string | null }>): Promise<void> {
  const presence = store.as(PRESENCE);
  for (const [i, s] of seenStatements(held).entries()) {
    const began = TRACE ? process.hrtime.bigint() : 0n;
    await presence.once(s.sql, s.params);
    // The push trace only: each statement's start, rows and length (bench/push-tail.mjs lines slow pushes up against them).
    if (TRACE) hop('ev.seen', `${Math.min(SEEN_CHUNK, held.length - i * SEEN_CHUNK)}:${(process.hrtime.bigint() - began) / 1000n}`, began);
  }
}

/** What the presence refresh and the streams' ends do their statements as (/metrics counts them apart from requests). */
const PRESENCE: Work = { name: 'presence', lane: 'request' };

/**
 * {@link streamsSeen}'s statements, each deciding on its `?now`. Set-based, ONE statement per
 * chunk: at 10,000 streams a statement per stream would be 20,000 round trips per refresh on
 * PostgreSQL. A holder counts as seen only when the stream was its own (same home).
 */
export function seenStatements(held: ReadonlyArray<{ sessionId: string; home: string | null }>): AtNow[] {
  const out: AtNow[] = [];
  for (let i = 0; i < held.length; i += SEEN_CHUNK) {
    const chunk = held.slice(i, i + SEEN_CHUNK);
    const holders = chunk.filter((h): h is { sessionId: string; home: string } => h.home !== null);
    const holderSet =
      holders.length === 0
        ? ''
        : `, holder_seen_at = CASE WHEN ${holders.map(() => '(id = ? AND holder_home = ?)').join(' OR ')} THEN ?now ELSE holder_seen_at END`;
    out.push({
      sql: `UPDATE sessions SET seen_at = ?now${holderSet} WHERE id IN (${chunk.map(() => '?').join(', ')})`,
      params: [...holders.flatMap((h) => [h.sessionId, h.home]), ...chunk.map((h) => h.sessionId)],
    });
  }
  return out;
}

/** Sessions per presence statement: well under SQLite's 32,766 parameters and PostgreSQL's 65,535. */
const SEEN_CHUNK = 500;

export interface Registered {
  status: 200 | 201;
  row: SessionRow;
}

async function stopFor(tx: Tx, agentId: string, clientKey: string, name: string | undefined): Promise<boolean> {
  const row =
    name === undefined
      ? await tx.get('SELECT 1 AS one FROM operator_stops WHERE agent_id = ? AND client_key = ? LIMIT 1', agentId, clientKey)
      : await tx.get('SELECT 1 AS one FROM operator_stops WHERE agent_id = ? AND (client_key = ? OR name = ?) LIMIT 1', agentId, clientKey, name);
  return row !== null;
}

/**
 * `POST /v1/sessions` (§3, §12): only `name` adopts, and only from the holder's home;
 * a stale holder's named session is taken over; `client_key` alone always creates.
 * The agent is locked for the unit: two registrations of one name on two instances
 * cannot both create it, nor pass the live-session limit together.
 */
export async function registerSession(core: HubCore, tx: Tx, agentId: string, req: CreateSessionRequest): Promise<Answer<Registered>> {
  await tx.lockAgent(agentId);
  await sweepLapsed(core, tx);
  if (await stopFor(tx, agentId, req.client_key, req.name)) {
    return bad(
      403,
      'session_closed_by_operator',
      `a human closed this agent session's mailbox (client_key or name matches an operator stop); do not re-register until a human lifts it (oh-hai hub lift --agent ${agentId})`,
    );
  }
  const now = tx.now;
  const lease = clampLease(core.config, req.lease_seconds);
  const holder = req.home !== undefined && req.host !== undefined && req.pid !== undefined ? { home: req.home, host: req.host, pid: req.pid } : null;
  if (req.name !== undefined) {
    // NO KEY UPDATE, not UPDATE: an adopt ends nothing, so it need not wait for the sends share-locking
    // the row (messages.ts SESSION_GUARD), each of which waits for the agent lock held here: a deadlock.
    const live = await tx.get<SessionRow>(`SELECT * FROM sessions WHERE agent_id = ? AND name = ? AND state = 'active' FOR NO KEY UPDATE`, agentId, req.name);
    if (live) {
      const ownerHome = live.holder_home ?? live.home;
      const sameHome = ownerHome === (req.home ?? null);
      if (!sameHome && holderSeen(core, live, now)) return heldError(live);
      if (sameHome) {
        await tx.run(
          'UPDATE sessions SET lease_seconds = ?, expires_at = ?, last_renewed_at = ?, client_key = ? WHERE id = ?',
          lease,
          now + lease * 1000,
          now,
          req.client_key,
          live.id,
        );
      } else {
        await tx.run(
          `UPDATE sessions SET lease_seconds = ?, expires_at = ?, last_renewed_at = ?, client_key = ?, home = ?,
             holder_home = ?, holder_host = ?, holder_pid = ?, holder_since = ?, holder_seen_at = ? WHERE id = ?`,
          lease,
          now + lease * 1000,
          now,
          req.client_key,
          req.home ?? null,
          holder?.home ?? null,
          holder?.host ?? null,
          holder?.pid ?? null,
          holder ? now : null,
          holder ? now : null,
          live.id,
        );
        tx.afterCommit(() => core.streams.closeSession(live.id, 'replaced'));
        tx.wake('session', live.id);
      }
      return good({ status: 200, row: (await sessionById(tx, live.id))! });
    }
  }
  const live = (await tx.get<{ n: number }>(`SELECT CAST(COUNT(*) AS INTEGER) AS n FROM sessions WHERE agent_id = ? AND state = 'active'`, agentId))!.n;
  if (live >= HUB_DEFAULTS.maxLivePerAgent) {
    return bad(
      409,
      'too_many_sessions',
      `agent ${agentId} already has ${live} live sessions (the limit is ${HUB_DEFAULTS.maxLivePerAgent}); close one (oh-hai session close) or let one lapse`,
      { limit: HUB_DEFAULTS.maxLivePerAgent },
    );
  }
  const id = newId('sess');
  await tx.run(
    `INSERT INTO sessions (id, agent_id, name, client_key, home, state, lease_seconds, expires_at, last_renewed_at, created_at,
       closed_at, seen_at, holder_home, holder_host, holder_pid, holder_since, holder_seen_at)
     VALUES (?, ?, ?, ?, ?, 'active', ?, ?, ?, ?, NULL, NULL, ?, ?, ?, ?, ?)`,
    id,
    agentId,
    req.name ?? null,
    req.client_key,
    req.home ?? null,
    lease,
    now + lease * 1000,
    now,
    now,
    holder?.home ?? null,
    holder?.host ?? null,
    holder?.pid ?? null,
    holder ? now : null,
    holder ? now : null,
  );
  return good({ status: 201, row: (await sessionById(tx, id))! });
}

/** `POST /v1/sessions/:id/close` by its agent; idempotent, and a terminal session comes back unchanged. */
export async function closeSession(core: HubCore, tx: Tx, agentId: string, id: string): Promise<Answer<SessionRow>> {
  const found = await ownSession(core, tx, agentId, id);
  if (!found.ok || found.value.state !== 'active') return found;
  return good(await endSession(core, tx, found.value, 'closed'));
}

/** The operator kill-switch (§9): closed_by_operator, mail bounces, a stop is recorded for (agent, client_key) and (agent, name). */
export async function operatorClose(core: HubCore, tx: Tx, id: string): Promise<Answer<SessionRow>> {
  const r = await sessionById(tx, id, true);
  if (!r) return bad(404, 'session_not_found', `no session ${id} in this account`);
  if ((await current(core, tx, r)).state !== 'active') return good((await sessionById(tx, id))!);
  await tx.run(
    'INSERT INTO operator_stops (agent_id, client_key, name, session_id, created_at) VALUES (?, ?, ?, ?, ?)',
    r.agent_id,
    r.client_key,
    r.name,
    r.id,
    tx.now,
  );
  return good(await endSession(core, tx, r, 'closed_by_operator'));
}

export interface OperatorStopRow {
  agent_id: string;
  client_key: string | null;
  name: string | null;
  session_id: string | null;
  created_at: number;
}

export const listOperatorStops = (q: Sql): Promise<OperatorStopRow[]> =>
  q.all<OperatorStopRow>('SELECT agent_id, client_key, name, session_id, created_at FROM operator_stops ORDER BY seq');

/** Lift operator stops of one agent: those matching client_key or name, or all of them when neither is given. */
export async function liftStops(tx: Tx, agentId: string, clientKey: string | undefined, name: string | undefined): Promise<number> {
  if (clientKey === undefined && name === undefined) return tx.run('DELETE FROM operator_stops WHERE agent_id = ?', agentId);
  let lifted = 0;
  if (clientKey !== undefined) lifted += await tx.run('DELETE FROM operator_stops WHERE agent_id = ? AND client_key = ?', agentId, clientKey);
  if (name !== undefined) lifted += await tx.run('DELETE FROM operator_stops WHERE agent_id = ? AND name = ?', agentId, name);
  return lifted;
}

const END_REASON: Record<Exclude<SessionState, 'active'>, EndReason> = {
  lapsed: 'session_lapsed',
  closed: 'session_closed',
  closed_by_operator: 'session_closed_by_operator',
};

/**
 * A session stopped: its unacknowledged mail bounces (receipts to senders), receipts
 * waiting in it move to the agent's principal mailbox (they cannot bounce), its claimed principal entries are
 * released, and an open stream gets `event: closed`. The row is re-read under its lock:
 * an instance that lost the race to end it changes nothing.
 */
async function endSession(core: HubCore, tx: Tx, r: SessionRow, state: Exclude<SessionState, 'active'>): Promise<SessionRow> {
  const locked = await sessionById(tx, r.id, true);
  if (!locked || locked.state !== 'active') return locked ?? r;
  const closedAt = state === 'lapsed' ? locked.expires_at : tx.now;
  await tx.run('UPDATE sessions SET state = ?, closed_at = ? WHERE id = ?', state, closedAt, r.id);
  const waiting = await tx.all<EntryRow>(`SELECT * FROM entries WHERE to_session = ? AND state = 'pending' ORDER BY seq`, r.id);
  for (const e of waiting) {
    if (e.message_id !== null) {
      await setEntryState(tx, e.id, 'bounced');
      await markUndeliverable(tx, e.message_id, END_REASON[state]);
    } else {
      await moveToPrincipal(tx, e);
    }
  }
  await releaseClaims(tx, r.id, r.agent_id);
  tx.afterCommit(() => {
    core.streams.closeSession(r.id, state as StreamCloseReason);
    if (state === 'lapsed') core.metrics.lapsed(1);
    if (state === 'closed_by_operator') core.metrics.operatorStop();
  });
  tx.wake('session', r.id);
  return (await sessionById(tx, r.id))!;
}
