import type { Entry } from '../contract/index.js';
import { deliveryWrapperBytes, formatAddress } from '../contract/index.js';
import type { Sql, Tx } from './sql.js';

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
}

export async function insertEntry(tx: Tx, entry: Entry, to: { agentId: string; sessionId: string | null }, messageId: string | null): Promise<void> {
  await tx.run(
    `INSERT INTO entries (id, kind, body, to_agent, to_session, claimed_session, message_id, created_at, delivered, state)
     VALUES (?, ?, ?, ?, ?, NULL, ?, ?, 0, 'pending')`,
    entry.id,
    entry.kind,
    JSON.stringify(entry),
    to.agentId,
    to.sessionId,
    messageId,
    Date.parse(entry.created_at),
  );
  tx.wake('mail', to.agentId);
}

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

/**
 * The seqs of a mailbox's next pending entries after `afterSeq`, oldest first, at most `limit`.
 * Keyset reads, one per source, each a range scan on an index that ends in `seq` (so neither
 * reads rows it skips nor sorts): a session's own entries, principal entries nobody has
 * claimed, and principal entries it claimed already. At most 3 × limit index entries are read
 * and no table row; the bodies are read afterwards, one by one, only while the page has room.
 */
async function pendingSeqs(q: Sql, box: Mailbox, afterSeq: number, limit: number): Promise<number[]> {
  const free = `SELECT seq FROM entries
    WHERE to_agent = ? AND to_session IS NULL AND state = 'pending' AND claimed_session IS NULL AND seq > ? ORDER BY seq LIMIT ?`;
  if (box.sessionId === null) return (await q.all<{ seq: number }>(free, box.agentId, afterSeq, limit)).map((r) => r.seq);
  // Every derived table is named: PostgreSQL requires it, SQLite accepts it.
  const rows = await q.all<{ seq: number }>(
    `SELECT seq FROM (
       SELECT * FROM (SELECT seq FROM entries
         WHERE to_session = ? AND state = 'pending' AND seq > ? ORDER BY seq LIMIT ?) AS own
       UNION ALL SELECT * FROM (${free}) AS free
       UNION ALL SELECT * FROM (SELECT seq FROM entries
         WHERE claimed_session = ? AND state = 'pending' AND seq > ? ORDER BY seq LIMIT ?) AS claimed
     ) AS pending ORDER BY seq LIMIT ?`,
    box.sessionId,
    afterSeq,
    limit,
    box.agentId,
    afterSeq,
    limit,
    box.sessionId,
    afterSeq,
    limit,
    limit,
  );
  return rows.map((r) => r.seq);
}

/** A page, and whether more may be pending right behind it (it stopped at its count or byte bound). */
export interface PendingPage {
  rows: EntryRow[];
  more: boolean;
}

/**
 * The next page of what a drain or push hands over after `afterSeq`, oldest first, claiming it
 * in the same unit: for a session, its own unacknowledged entries plus principal entries
 * it claims now (first-claim-wins); for the principal mailbox, principal entries no session has
 * claimed. Bounded by count AND bytes, always at least one entry when any is pending, so an
 * entry of any legal size makes progress; the rows read are bounded by the page, never by the
 * backlog behind it. The caller continues from the last row's seq; `more` false means nothing
 * was pending past this page when it was read, so a reader need not ask again until woken.
 *
 * The claim is a conditional UPDATE (`… AND claimed_session IS NULL`): on PostgreSQL a
 * racing claim from another instance waits for this row's lock, re-reads the row and
 * changes nothing, so exactly one session wins.
 */
export async function pendingPage(tx: Tx, box: Mailbox, afterSeq: number, bound: PageBound): Promise<PendingPage> {
  const seqs = await pendingSeqs(tx, box, afterSeq, bound.limit);
  const rows: EntryRow[] = [];
  let bytes = 0;
  for (const seq of seqs) {
    const row = await tx.get<EntryRow>('SELECT * FROM entries WHERE seq = ?', seq);
    if (row === null) continue;
    bytes += deliveryBytes(row);
    if (rows.length > 0 && bytes > bound.maxBytes) return { rows, more: true };
    if (box.sessionId !== null && row.to_session === null && row.claimed_session === null) {
      if ((await tx.run('UPDATE entries SET claimed_session = ? WHERE seq = ? AND claimed_session IS NULL', box.sessionId, seq)) !== 1) continue;
      row.claimed_session = box.sessionId;
    }
    rows.push(row);
  }
  return { rows, more: seqs.length >= bound.limit };
}

/** Whether `pendingPage` would hand anything over now; a read that claims nothing. */
export async function hasPending(q: Sql, box: Mailbox): Promise<boolean> {
  return (await pendingSeqs(q, box, 0, 1)).length > 0;
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
  await tx.run('UPDATE entries SET to_session = NULL, claimed_session = NULL, body = ? WHERE id = ?', JSON.stringify(entry), row.id);
  tx.wake('released', row.to_agent);
}
