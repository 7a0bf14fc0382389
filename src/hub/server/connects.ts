import type { ConsumerIdentity } from '../contract/index.js';
import { agentLetIn } from './auth.js';
import { armsOf, mergedArms, pagesOf, pagesOfWanted, type PageBound, type PageRequest, type PageRow } from './entries.js';
import type { Param, Store } from './sql.js';
import type { OpenStream } from './registry.js';
import type { Presented, StreamLease } from './sessions.js';

/** Stream connects one statement renews at most. */
export const CONNECTS_PER_STATEMENT = 64;
/**
 * Connect statements a Hub has asked for or sent and not had answered: the connects made meanwhile queue
 * and go together in the next (a round trip, longer on a loaded database).
 */
const STATEMENTS_IN_FLIGHT = 1;
/**
 * How long the first connect queued waits for others before its statement asks for a connection. A held
 * stream's reconnect is one request, and ~330 a second arrive one by one: without a wait each found the
 * statement before it answered and went alone (1.00 round trips a connect in bench/connect-cost.mjs at
 * 1,000 streams, hold 3 s); with 10 ms, 0.03 — the Hub's CPU a connect 0.60×, the database's 0.12×
 * (docs/deploy.md, session 18). The batch's size is this wait times one instance's connect rate, and N
 * instances each get 1/N of a fleet's connects: at 10 ms two instances at 10,000 streams made twice one
 * instance's statements (0.4 round trips a connect against 0.2); 25 ms gives each of two the batches 10
 * gave one (idle, same run: 0.2 round trips, the Hubs' CPU a connect 0.65×, the database's 0.54×;
 * docs/deploy.md, session 19). A reconnect's `open` comes that much later; what is sent meanwhile is in
 * its first page.
 */
const GATHER_MS = 25;

/** What a batched connect binds: its token, its consumer (a bridge's; none for a plain client) and its first page's bound. */
export interface BatchedConnect {
  tokenHash: string;
  session: string;
  consumer: ConsumerIdentity | null;
  bound: PageBound;
  /** The stream making this connect (registered once its renewal commits). */
  stream: OpenStream | null;
}

interface Waiting extends BatchedConnect {
  settle: (presented: Presented | null) => void;
  fail: (error: unknown) => void;
}

/** A {@link connectsText} row: a renewed session (its request's place), and an entry of its first page or none. */
type BatchRow = Omit<StreamLease, 'id'> & { req_box?: number; session_id: string } & (PageRow | { [K in keyof PageRow]: null });

/**
 * Stream connects on a store a round trip away (PostgreSQL), renewed together: every connect made within
 * {@link GATHER_MS} of the first queued, or while the statement before them was out (waiting for a pool
 * connection of stream work's lane, lanes.ts, or for its answer), is renewed by ONE statement
 * ({@link connectsText}), its first page included.
 * A held stream reconnects once per hold (~330 connects a second at 10,000 streams), and a connect's
 * own statement cost the Hub a socket write and the database a Bind, a plan started and ended, a
 * commit and a socket read each (docs/deploy.md, session 18). A connect alone takes its own statement
 * (`single`), as before. One statement at a time is out ({@link STATEMENTS_IN_FLIGHT}): it takes everything
 * queued once it has its pool connection, and what is made meanwhile waits for the next.
 */
export class ConnectBatcher {
  private queue: Waiting[] = [];
  private scheduled = false;
  /** Statements asked for and not answered yet (at most {@link STATEMENTS_IN_FLIGHT}). */
  private running = 0;

  constructor(
    /** The store as the stream connect's work (its lane, its round trips counted by its route). */
    private readonly store: Pick<Store, 'onceTaken'>,
    /** A connect alone: its own statement, as before this batching (its rows as {@link connectsText}'s, without `req_box`). */
    private readonly single: (c: BatchedConnect) => { sql: string; params: readonly Param[] },
    /** Each renewed session, once the statement committed (the stream registered, its superseded ones ended). */
    private readonly renewed: (c: BatchedConnect, sessionId: string) => void,
  ) {}

  present(c: BatchedConnect): Promise<Presented | null> {
    return new Promise<Presented | null>((settle, fail) => {
      this.queue.push({ ...c, settle, fail });
      if (this.scheduled) return;
      this.scheduled = true;
      // Every connect parsed within GATHER_MS joins.
      setTimeout(() => {
        this.scheduled = false;
        this.ask();
      }, GATHER_MS);
    });
  }

  private ask(): void {
    if (this.running >= STATEMENTS_IN_FLIGHT || this.queue.length === 0) return;
    this.running += 1;
    let batch: Waiting[] = [];
    const take = () => {
      // In the sessions' order, as a set-based write of many sessions (presence, ends) locks them by their key: two
      // statements locking the same rows take them in one order, so neither holds one the other waits for.
      batch = this.queue.splice(0, CONNECTS_PER_STATEMENT).sort((a, b) => (a.session < b.session ? -1 : a.session > b.session ? 1 : 0));
      return batch.length === 1 ? this.single(batch[0]!) : connectsStatement(batch);
    };
    const done = () => {
      this.running -= 1;
      this.ask();
    };
    this.store
      .onceTaken<BatchRow>(take, (rows) => {
        // A renewed session's row comes once per entry of its page.
        const done = new Set<number>();
        for (const r of rows) {
          const box = r.req_box ?? 0;
          if (done.has(box)) continue;
          done.add(box);
          this.renewed(batch[box]!, r.session_id);
        }
      })
      .then(
        (rows) => {
          done();
          const presented = presentedOf(batch, rows);
          for (const [i, w] of batch.entries()) w.settle(presented[i]!);
        },
        (e: unknown) => {
          done();
          for (const w of batch) w.fail(e);
        },
      );
  }
}

/** Each connect's renewed lease and first page, or null where its renewal missed (the locked path decides it then). */
function presentedOf(batch: readonly BatchedConnect[], rows: BatchRow[]): Array<Presented | null> {
  const leases: Array<StreamLease | null> = batch.map(() => null);
  for (const r of rows) leases[r.req_box ?? 0] ??= { id: r.session_id, agent_id: r.agent_id, lease_seconds: r.lease_seconds, expires_at: r.expires_at };
  const requests: PageRequest[] = batch.map((c, i) => ({ box: { agentId: leases[i]?.agent_id ?? '', sessionId: c.session }, afterSeq: 0, bound: c.bound }));
  // An entry's row names its request's place (`box`) itself: the page read's, joined on it.
  const pages = pagesOf(
    rows.filter((r): r is BatchRow & PageRow => r.seq !== null),
    requests,
  );
  return leases.map((row, i) => (row === null ? null : { row, page: pages[i]! }));
}

/** A connect's consumer as the values a statement binds (each null without one). */
export const consumerValues = (c: BatchedConnect): { home: string | null; host: string | null; pid: number | null } => ({
  home: c.consumer?.home ?? null,
  host: c.consumer?.host ?? null,
  pid: c.consumer?.pid ?? null,
});

function connectsStatement(batch: readonly BatchedConnect[]): { sql: string; params: Param[] } {
  const requests = batch.map((c, i) => ({
    i,
    token: c.tokenHash,
    session: c.session,
    ...consumerValues(c),
    lim: c.bound.limit,
    bound: c.bound.maxBytes,
  }));
  return { sql: connectsText(), params: [JSON.stringify(requests), batch.length - 1] };
}

/**
 * {@link ConnectBatcher}'s statement, one text whatever the batch's size (made once; planned once per
 * pool connection). For each request, the stream connect's renewal exactly as its own statement makes
 * it (sessions.ts `renewIfHeld`, presented by its token): only an active, unexpired session of the agent
 * the token lets in — for a consumer, held by its home and pid or by nobody — the lease renewed, the
 * session seen now; for a consumer, the holder recorded and seen now (a connect without one leaves the
 * holder's columns as they were). Then each renewed session's
 * first page, as the connect's own statement reads it. Two connects of one session in one batch: the
 * UPDATE writes a row once, with one of them (PostgreSQL skips a row the same statement already
 * updated), so one is renewed and the other misses and takes the locked path (409 there).
 *
 * Three forms are there for the planner, whose generic plan is made once per pool connection at its first
 * run (test/integration/cluster/connect-batch-plan.test.ts; the batched page read's lesson, entries.ts):
 * `r.i BETWEEN 0 AND <last>` holds for every request, and makes a set-returning function count as one row,
 * not 100; the credential is read per request in `req`, not in the join's condition (there it was a hash
 * join over a sequential scan of sessions); and `COALESCE(s.state, '')` keeps the state test off the
 * indexes (without statistics `state = 'active'` counts as 0.5 % of the rows: the sessions were then read
 * by sessions_by_agent, every one of the agent's, or by sessions_by_state). Each session is found by its key.
 */
let connectsSql: string | null = null;
export function connectsText(): string {
  if (connectsSql !== null) return connectsSql;
  const column = (sql: string) => ({ sql, params: [] });
  const lim = column('r.lim');
  const seqs = mergedArms(armsOf(column('r.session_id'), column('0'), lim, 'seq', column('r.agent_id')), lim);
  const pages = pagesOfWanted({ sql: `SELECT r.req_box AS box, r.bound, p.seq FROM renewed AS r CROSS JOIN LATERAL (${seqs.sql}) AS p`, params: [] });
  connectsSql = `WITH req AS MATERIALIZED (
       SELECT r.i, ${agentLetIn('r.token')} AS agent, r.session, r.home, r.host, r.pid, r.lim, r.bound
       FROM json_to_recordset(CAST(? AS JSON)) AS r(i INTEGER, token TEXT, session TEXT, home TEXT, host TEXT, pid BIGINT, lim INTEGER, bound BIGINT)
       WHERE r.i BETWEEN 0 AND CAST(? AS INTEGER)),
     renewed AS (
       UPDATE sessions AS s SET expires_at = CAST(?now + s.lease_seconds * 1000 AS BIGINT), last_renewed_at = ?now, seen_at = ?now,
         holder_home = CASE WHEN req.home IS NULL THEN s.holder_home ELSE req.home END,
         holder_host = CASE WHEN req.home IS NULL THEN s.holder_host ELSE req.host END,
         holder_pid = CASE WHEN req.home IS NULL THEN s.holder_pid ELSE req.pid END,
         holder_seen_at = CASE WHEN req.home IS NULL THEN s.holder_seen_at ELSE ?now END,
         holder_since = CASE WHEN req.home IS NOT NULL AND s.holder_home IS NULL THEN ?now ELSE s.holder_since END
       FROM req
       WHERE s.id = req.session AND s.agent_id = req.agent AND COALESCE(s.state, '') = 'active' AND s.expires_at > ?now
         AND (req.home IS NULL OR s.holder_home IS NULL OR (s.holder_home = req.home AND s.holder_pid = req.pid))
       RETURNING req.i AS req_box, req.lim, req.bound, s.id AS session_id, s.agent_id, s.lease_seconds, s.expires_at),
     ${pages.ctes}
     SELECT renewed.req_box, renewed.session_id, renewed.agent_id, renewed.lease_seconds, renewed.expires_at, paged.*
     FROM renewed LEFT JOIN (${pages.select}) AS paged ON paged.box = renewed.req_box`;
  return connectsSql;
}
