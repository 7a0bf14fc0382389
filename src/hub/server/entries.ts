import type { Entry } from '../contract/index.js';
import { canonicalJson, deliveryWrapperBytes, formatAddress } from '../contract/index.js';
import type { Insert, Param, Sql, Tx, WakeTopic } from './sql.js';

/**
 * Entry rows: one per entry in a mailbox. `state` is `pending` until a consumer
 * acknowledges it, or until it leaves the mailbox (`bounced`, `expired`).
 * A principal entry (`to_session` null) is claimed by the first session it reaches.
 */
export interface EntryRow {
  seq: number;
  id: string;
  kind: Entry['kind'];
  body: string;
  to_agent: string;
  to_session: string | null;
  claimed_session: string | null;
  message_id: string | null;
  created_at: number;
  delivered: number;
  state: 'pending' | 'acknowledged' | 'bounced' | 'expired';
  /** 1: `body` is the entry's canonical JSON, signed as stored; null: written by an earlier build. */
  canonical: number | null;
}

/** Where an entry goes: an agent's session mailbox, or (sessionId null) its principal mailbox. */
export interface EntryTarget {
  agentId: string;
  sessionId: string | null;
}

/**
 * An entry's row as it is stored. The body is written as its canonical JSON (MA2H §12) once, here,
 * so every delivery signs the stored text as it is instead of parsing and re-serialising it.
 */
export const entryInsert = (entry: Entry, to: EntryTarget, messageId: string | null): Insert =>
  entryRow(entry.id, entry.kind, to, messageId, canonicalJson(entry), Date.parse(entry.created_at));

/**
 * An entry's row, pending in `to`'s mailbox. `body` and `created_at` are null where a statement
 * forms them itself from its clock (messages.ts's one-statement send).
 */
export const entryRow = (id: string, kind: string, to: EntryTarget, messageId: string | null, body: string | null, createdAt: number | null): Insert => ({
  table: 'entries',
  row: {
    id,
    kind,
    body,
    to_agent: to.agentId,
    to_session: to.sessionId,
    claimed_session: null,
    message_id: messageId,
    created_at: createdAt,
    delivered: 0,
    state: 'pending',
    canonical: 1,
  },
});

/**
 * Store `first` (a message, or nothing) and the entry in one locked insert, answer the seq of the
 * first row stored, and wake the entry's mailbox once committed. A stream reads its mailbox by keyset (seq > the last it pushed),
 * so an agent's entries must become visible in seq order. On PostgreSQL two units inserting for
 * one agent at once could commit out of order (seq 11 before 10): a stream woken by 11 moves past
 * 10, and 10 waits for the hold bound. Holding the agent's lock from before the seq is drawn until
 * COMMIT makes commit order seq order per agent (docs/deploy.md; Tx.insertLocked takes it in the
 * insert's own statement); on SQLite units are serial already.
 */
export async function insertWithEntry(tx: Tx, first: Insert | null, entry: Entry, to: EntryTarget, messageId: string | null): Promise<number> {
  const row = entryInsert(entry, to, messageId);
  const seq = first === null ? await tx.insertLocked(to.agentId, row) : await tx.insertLocked(to.agentId, first, row);
  for (const [topic, key] of mailWakes(to)) tx.wake(topic, key);
  return seq;
}

/**
 * What an entry stored for `to` wakes: drains (and Hubs of earlier builds) wait on the agent; a
 * stream waits on its own mailbox only, so a send to one session wakes that session's stream, not
 * every stream of the agent.
 */
export const mailWakes = (to: EntryTarget): Array<[WakeTopic, string]> => [
  ['mail', to.agentId],
  ['mail', mailboxKey(to.agentId, to.sessionId)],
];

/** Store an entry in its mailbox (a receipt: no message of its own). */
export async function insertEntry(tx: Tx, entry: Entry, to: EntryTarget, messageId: string | null): Promise<void> {
  await insertWithEntry(tx, null, entry, to, messageId);
}

/**
 * The `mail` wake-up key of one mailbox: `<agent>#<session>`, or `<agent>#` for the principal
 * mailbox (ids never hold a `#`). Beside the agent's own key, which every insert wakes too.
 */
export const mailboxKey = (agentId: string, sessionId: string | null): string => `${agentId}#${sessionId ?? ''}`;

export const entryOf = (row: EntryRow): Entry => JSON.parse(row.body) as Entry;

/** The entry, row-locked when read inside a unit that changes it. */
export const entryById = (q: Sql, id: string, lock = false): Promise<EntryRow | null> =>
  q.get<EntryRow>(`SELECT * FROM entries WHERE id = ?${lock ? ' FOR UPDATE' : ''}`, id);

/** Which mailbox a page is read from: a session's, or (sessionId null) the agent's principal mailbox. */
export interface Mailbox {
  agentId: string;
  sessionId: string | null;
}

/** How much one page may carry: at most `limit` entries and about `maxBytes` of deliveries, but always one. */
export interface PageBound {
  limit: number;
  maxBytes: number;
}

/** What one row costs a page: the bytes its delivery puts on the wire, at most. */
export const deliveryBytes = (row: EntryRow): number => Buffer.byteLength(row.body) + deliveryWrapperBytes();

/** One statement and its parameters. */
export interface Statement {
  sql: string;
  params: Param[];
}

/**
 * A mailbox's next pending entries after `afterSeq`, oldest first, at most `limit` from each
 * source, as keyset reads selecting `columns`: each a range scan on an index that ends in `seq`
 * (so none reads rows it skips or sorts). A session's own entries, principal entries nobody has
 * claimed, and principal entries it claimed already; the principal mailbox is the second alone.
 * The sources never share an entry (a claim is only ever taken on principal mail).
 */
export function pendingArms(box: Mailbox, afterSeq: number, limit: number, columns = 'seq', agent: Statement = byParam(box.agentId)): Statement[] {
  return armsOf(
    box.sessionId === null ? null : byParam(box.sessionId),
    { sql: '?', params: [afterSeq] },
    { sql: 'CAST(? AS INTEGER)', params: [limit] },
    columns,
    agent,
  );
}

/** {@link pendingArms} with each value as SQL: a parameter, or a column of the row a lateral read is made for. */
export function armsOf(session: Statement | null, after: Statement, limit: Statement, columns: string, agent: Statement): Statement[] {
  const free = {
    sql: `SELECT ${columns} FROM entries
    WHERE to_agent = ${agent.sql} AND to_session IS NULL AND state = 'pending' AND claimed_session IS NULL AND seq > ${after.sql} ORDER BY seq LIMIT ${limit.sql}`,
    params: [...agent.params, ...after.params, ...limit.params],
  };
  if (session === null) return [free];
  return [
    {
      sql: `SELECT ${columns} FROM entries
         WHERE to_session = ${session.sql} AND state = 'pending' AND seq > ${after.sql} ORDER BY seq LIMIT ${limit.sql}`,
      params: [...session.params, ...after.params, ...limit.params],
    },
    free,
    {
      sql: `SELECT ${columns} FROM entries
         WHERE claimed_session = ${session.sql} AND state = 'pending' AND seq > ${after.sql} ORDER BY seq LIMIT ${limit.sql}`,
      params: [...session.params, ...after.params, ...limit.params],
    },
  ];
}

/**
 * The seqs of a mailbox's next pending entries after `afterSeq`, oldest first, at most `limit`,
 * as ONE subquery and its parameters: the {@link pendingArms} merged. At most 3 × limit index
 * entries are read.
 */
function pendingSeqs(box: Mailbox, afterSeq: number, limit: number, agent?: Statement): Statement {
  return mergedArms(pendingArms(box, afterSeq, limit, 'seq', agent), { sql: 'CAST(? AS INTEGER)', params: [limit] });
}

/** A session mailbox's three arms merged in seq order, at most `limit`; the principal mailbox's one arm as it is. */
export function mergedArms(arms: Statement[], limit: Statement): Statement {
  if (arms.length === 1) return arms[0]!;
  const [own, free, claimed] = arms as [Statement, Statement, Statement];
  // Every derived table is named: PostgreSQL requires it, SQLite accepts it.
  return {
    sql: `SELECT seq FROM (
       SELECT * FROM (${own.sql}) AS own
       UNION ALL SELECT * FROM (${free.sql}) AS free
       UNION ALL SELECT * FROM (${claimed.sql}) AS claimed
     ) AS pending ORDER BY seq LIMIT ${limit.sql}`,
    params: [...own.params, ...free.params, ...claimed.params, ...limit.params],
  };
}

/**
 * Whether an entry whose delivery takes `bytes` joins a page holding `count` entries and `used`
 * bytes: the first always (an entry of any legal size makes progress), the rest while the page's
 * byte bound holds.
 */
export const fitsPage = (count: number, used: number, bytes: number, bound: PageBound): boolean => count === 0 || used + bytes <= bound.maxBytes;

/** One mailbox's page to read: after which seq, and how much it may carry. */
export interface PageRequest {
  box: Mailbox;
  afterSeq: number;
  bound: PageBound;
  /**
   * The mailbox's agent as SQL, when the statement knows it and the caller does not yet (a stream
   * connect's renewal lets its token in and reads the page together); else `box.agentId`.
   */
  agent?: Statement;
}

/** A page to read from a session's mailbox (what a stream reads). */
export type SessionPageRequest = Omit<PageRequest, 'box' | 'agent'> & { box: { agentId: string; sessionId: string } };

/** A value as a statement's parameter. */
const byParam = (value: Param): Statement => ({ sql: 'CAST(? AS TEXT)', params: [value] });

/**
 * The next page of each mailbox, oldest first, in ONE statement whatever their number (the pages
 * of every stream woken together on PostgreSQL, where each statement is a round trip): each
 * mailbox's keyset subquery picks at most its `limit` seqs, tagged with its place in `requests`; a
 * window over their body sizes alone, per mailbox, keeps the ones that start within that
 * mailbox's byte budget, and only those rows are read whole. OCTET_LENGTH is answered from the
 * record header (SQLite) or the TOAST pointer (PostgreSQL) without reading the body, and the sizes
 * are materialised before the window sorts them, so no body of a row left out is read or copied:
 * a page costs the bytes it returns. (Summing LENGTH over whole rows read and sorted every
 * candidate's body — 40 maximal-escape entries, 15 MiB, per page per stream — and held the Hub's
 * event loop for seconds under 16 streams.) The join's output is put in order here, not by a sort
 * in SQL that would copy the bodies once more. The exact byte bound is applied here: always at
 * least one entry per mailbox when any is pending, so an entry of any legal size makes progress.
 * A principal entry pending for several of the mailboxes is in each of their pages (each may
 * claim it; one does). Claims nothing: a read outside a unit may serve it when {@link needsClaim}
 * says no.
 */
export async function readPages(q: Sql, requests: readonly PageRequest[]): Promise<PendingPage[]> {
  const read = pagesQuery(requests);
  return pagesOf(await q.all<PageRow>(`WITH ${read.ctes} ${read.select}`, ...read.params), requests);
}

/** A row of {@link pagesQuery}: the entry, which request's page it is in, and that page's candidates. */
export type PageRow = EntryRow & { box: number; candidates: number };

/**
 * {@link readPages}'s statement in its parts: the common table expressions (`wanted`, `sized`,
 * `page`) and the select of the pages' rows, so a statement of another kind may read pages too (a
 * stream connect's renewal reads its first page). `when`, a condition, holds every candidate back
 * unless it is true (the page of a renewal that took place).
 */
export function pagesQuery(requests: readonly PageRequest[], when = ''): { ctes: string; select: string; params: Param[] } {
  const wanted: string[] = [];
  const params: Param[] = [];
  for (const [i, r] of requests.entries()) {
    const seqs = pendingSeqs(r.box, r.afterSeq, r.bound.limit, r.agent);
    wanted.push(`SELECT ${i} AS box, CAST(? AS BIGINT) AS bound, seq FROM (${seqs.sql}) AS box${i}${when === '' ? '' : ` WHERE ${when}`}`);
    params.push(r.bound.maxBytes, ...seqs.params);
  }
  return pagesOfWanted({ sql: wanted.join(' UNION ALL '), params });
}

/** The pages' common table expressions and select, from `wanted`: a statement of (box, bound, seq) rows, each a candidate of its box's page. */
export function pagesOfWanted(wanted: Statement): { ctes: string; select: string; params: Param[] } {
  return {
    ctes: `wanted AS MATERIALIZED (${wanted.sql}),
       sized AS MATERIALIZED (SELECT wanted.box, wanted.bound, wanted.seq, OCTET_LENGTH(entries.body) AS bytes FROM wanted JOIN entries ON entries.seq = wanted.seq),
       page AS (SELECT box, bound, seq, SUM(bytes) OVER (PARTITION BY box ORDER BY seq) - bytes AS bytes_before, COUNT(*) OVER (PARTITION BY box) AS candidates FROM sized)`,
    select: `SELECT page.box, page.candidates, entries.* FROM page JOIN entries ON entries.seq = page.seq WHERE page.bytes_before < page.bound`,
    params: wanted.params,
  };
}

/**
 * {@link readPages} on PostgreSQL for session mailboxes, as ONE statement text whatever their
 * number: the requests are one JSON parameter, each mailbox's keyset arms a lateral subquery on its
 * row. The statement with a subquery per mailbox was a text per count (padded to powers of two:
 * seven), and each text is planned once per pool connection when it first runs there: 40–285 ms
 * of planning for the reads of 8–32 streams on a busy database, while every push in that read
 * waited (issue 14's bench at 10,000 streams: the slowest pushes of a quiet run; docs/deploy.md,
 * session 13). This text is planned once per connection, cheaply.
 */
export async function readSessionPages(q: Sql, requests: readonly SessionPageRequest[]): Promise<PendingPage[]> {
  const rows = requests.map((r, box) => ({
    box,
    agent: r.box.agentId,
    session: r.box.sessionId,
    after_seq: r.afterSeq,
    lim: r.bound.limit,
    bound: r.bound.maxBytes,
  }));
  return pagesOf(await q.all<PageRow>(sessionPagesText(), JSON.stringify(rows), requests.length - 1), requests);
}

/**
 * {@link readSessionPages}'s text: the same for every read, so made once (and hashed once by the store's prepared-statement lookup).
 *
 * `r.box BETWEEN 0 AND <the last box>` holds for every request (boxes are their places in the list) and is there for the
 * planner: it takes a set-returning function to return 100 rows, and with 100 requests a hash join reading the whole
 * entries table twice (the sizes, then the rows) costs less than 200 lookups by seq, so the read's generic plan — made once
 * per pool connection, at its first run — was two sequential scans of entries, kept while the table grew (issue 14's bench:
 * the plan made in the first sends read every entry of the run twice per page read; docs/deploy.md, session 17). A range on
 * a column without statistics is taken to keep 0.5 % of the rows, so the planner counts one request, as the stream
 * connect's page read (a subquery per request) is counted, and looks each candidate up by its seq.
 */
let sessionPagesSql: string | null = null;
function sessionPagesText(): string {
  if (sessionPagesSql !== null) return sessionPagesSql;
  const column = (name: string): Statement => ({ sql: `r.${name}`, params: [] });
  const limit = column('lim');
  const seqs = mergedArms(armsOf(column('session'), column('after_seq'), limit, 'seq', column('agent')), limit);
  const read = pagesOfWanted({
    sql: `SELECT r.box, r.bound, p.seq
       FROM json_to_recordset(CAST(? AS JSON)) AS r(box INTEGER, agent TEXT, session TEXT, after_seq BIGINT, lim INTEGER, bound BIGINT)
       CROSS JOIN LATERAL (${seqs.sql}) AS p
       WHERE r.box BETWEEN 0 AND CAST(? AS INTEGER)`,
    params: [],
  });
  return (sessionPagesSql = `WITH ${read.ctes} ${read.select}`);
}

/** The pages of `requests` from the rows of their {@link pagesQuery}, in order, each cut by its byte bound. */
export function pagesOf(rows: PageRow[], requests: readonly PageRequest[]): PendingPage[] {
  rows.sort((x, y) => x.box - y.box || x.seq - y.seq);
  const pages = requests.map(() => ({ rows: [] as EntryRow[], candidates: 0, full: false, bytes: 0 }));
  for (const { box, candidates, ...row } of rows) {
    const page = pages[box]!;
    const b = deliveryBytes(row);
    if (page.full || !fitsPage(page.rows.length, page.bytes, b, requests[box]!.bound)) {
      page.full = true;
      continue;
    }
    page.candidates = candidates;
    page.bytes += b;
    page.rows.push(row);
  }
  return pages.map((p, i) => ({
    rows: p.rows,
    more: p.full || p.candidates >= requests[i]!.bound.limit || p.rows.length < p.candidates,
    bytes: p.bytes,
  }));
}

/** The next page of one mailbox after `afterSeq`: {@link readPages} for one. */
export async function readPage(q: Sql, box: Mailbox, afterSeq: number, bound: PageBound): Promise<PendingPage> {
  return (await readPages(q, [{ box, afterSeq, bound }]))[0]!;
}

/** A page, and whether more may be pending right behind it (it stopped at its count or byte bound). */
export interface PendingPage {
  rows: EntryRow[];
  more: boolean;
  /** What its rows' deliveries put on the wire, at most. */
  bytes: number;
}

/** Whether handing `rows` to the session takes a claim: a principal entry nobody claimed yet. */
export const needsClaim = (box: Mailbox, rows: readonly EntryRow[]): boolean =>
  box.sessionId !== null && rows.some((r) => r.to_session === null && r.claimed_session === null);

/**
 * Claim a page's unclaimed principal entries for the session in ONE conditional UPDATE
 * (`… AND claimed_session IS NULL`): on PostgreSQL a racing claim from another instance waits
 * for the row lock, re-reads the row and changes nothing, so exactly one session wins. The
 * entries this session lost (claimed elsewhere, or no longer pending) leave the page; the caller
 * continues from the last row's seq either way.
 */
export async function claimPage(tx: Tx, box: Mailbox, rows: EntryRow[]): Promise<EntryRow[]> {
  if (!needsClaim(box, rows)) return rows;
  const free = rows.filter((r) => r.to_session === null && r.claimed_session === null);
  const wanted = free.map((r) => r.seq);
  const won = new Set(
    (
      await tx.all<{ seq: number }>(
        // Only for a session still active: a stream's page claimed after its session ended
        // (the close released its claims a moment before) would be held by no one, for good.
        // The share lock orders the claim with a concurrent close, which locks the row FOR UPDATE.
        // The rows are named by the index of unclaimed principal mail and the page's span of it as
        // well as by their seqs, so both planners read that span only: given the seqs alone, SQLite
        // read every pending entry (entries_open) once the claims index held no NULL keys; given the
        // agent without the span, PostgreSQL read all of the agent's unclaimed mail.
        `UPDATE entries SET claimed_session = ? WHERE to_agent = ? AND to_session IS NULL AND state = 'pending' AND claimed_session IS NULL
           AND seq BETWEEN ? AND ? AND seq IN (${wanted.map(() => '?').join(', ')})
           AND EXISTS (SELECT 1 FROM sessions WHERE id = ? AND state = 'active' FOR KEY SHARE) RETURNING seq`,
        box.sessionId,
        // The page's principal mail is one agent's (its one arm reads `to_agent = ?`).
        free[0]!.to_agent,
        Math.min(...wanted),
        Math.max(...wanted),
        ...wanted,
        box.sessionId,
      )
    ).map((r) => r.seq),
  );
  const out: EntryRow[] = [];
  for (const row of rows) {
    if (row.to_session === null && row.claimed_session === null) {
      if (!won.has(row.seq)) continue;
      row.claimed_session = box.sessionId;
    }
    out.push(row);
  }
  return out;
}

/**
 * The next page of what a drain or push hands over after `afterSeq`, claiming it in the same
 * unit: for a session, its own unacknowledged entries plus principal entries it claims now
 * (first-claim-wins); for the principal mailbox, principal entries no session has claimed.
 * Two statements at most, whatever the page's size. `more` false means nothing was pending
 * past this page when it was read, so a reader need not ask again until woken.
 */
export async function pendingPage(tx: Tx, box: Mailbox, afterSeq: number, bound: PageBound): Promise<PendingPage> {
  const read = await readPage(tx, box, afterSeq, bound);
  return { ...read, rows: await claimPage(tx, box, read.rows) };
}

/** Whether `pendingPage` would hand anything over now; a read that claims nothing. */
export async function hasPending(q: Sql, box: Mailbox): Promise<boolean> {
  const seqs = pendingSeqs(box, 0, 1);
  return (await q.all<{ seq: number }>(seqs.sql, ...seqs.params)).length > 0;
}

/** A session ended: its claimed, unacknowledged principal entries go back to the principal mailbox (§12). */
export async function releaseClaims(tx: Tx, sessionId: string, agentId: string): Promise<void> {
  const changed = await tx.run(`UPDATE entries SET claimed_session = NULL WHERE claimed_session = ? AND state = 'pending'`, sessionId);
  if (changed > 0) tx.wake('released', agentId);
}

export async function setEntryState(tx: Tx, id: string, state: EntryRow['state']): Promise<void> {
  await tx.run('UPDATE entries SET state = ? WHERE id = ?', state, id);
}

/**
 * Readdress an entry to its agent's principal mailbox, keeping its id, so a consumer that
 * already spooled it dedups the redelivery instead of printing it twice.
 */
export async function moveToPrincipal(tx: Tx, row: EntryRow): Promise<void> {
  const entry = { ...entryOf(row), to: formatAddress(row.to_agent, null) };
  await tx.run('UPDATE entries SET to_session = NULL, claimed_session = NULL, body = ?, canonical = 1 WHERE id = ?', canonicalJson(entry), row.id);
  tx.wake('released', row.to_agent);
}
