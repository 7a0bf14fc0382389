import type { Entry } from '../contract/index.js';
import { formatAddress } from '../contract/index.js';
import type { HubCore } from './core.js';

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

export function insertEntry(core: HubCore, entry: Entry, to: { agentId: string; sessionId: string | null }, messageId: string | null): void {
  core.db
    .prepare(
      `INSERT INTO entries (id, kind, body, to_agent, to_session, claimed_session, message_id, created_at, delivered, state)
       VALUES (?, ?, ?, ?, ?, NULL, ?, ?, 0, 'pending')`,
    )
    .run(entry.id, entry.kind, JSON.stringify(entry), to.agentId, to.sessionId, messageId, Date.parse(entry.created_at));
  core.bus.mail.emit(to.agentId);
}

export const entryOf = (row: EntryRow): Entry => JSON.parse(row.body) as Entry;

export function entryById(core: HubCore, id: string): EntryRow | null {
  return (core.db.prepare('SELECT * FROM entries WHERE id = ?').get(id) as EntryRow | undefined) ?? null;
}

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

/**
 * Room a delivery takes beyond its entry's JSON: the `{"entry":…,"signature":"…"}` wrapper and
 * the signature (t, a jti id of at most 128 bytes, alg, 64 hex digits), rounded up.
 */
export const DELIVERY_OVERHEAD_BYTES = 512;

/** What one row costs a page: the bytes its delivery puts on the wire. */
export const deliveryBytes = (row: EntryRow): number => Buffer.byteLength(row.body) + DELIVERY_OVERHEAD_BYTES;

/**
 * The seqs of a mailbox's next pending entries after `afterSeq`, oldest first, at most `limit`.
 * Keyset reads, one per source, each a range scan on an index that ends in `seq` (so neither
 * reads rows it skips nor sorts): a session's own entries, principal entries nobody has
 * claimed, and principal entries it claimed already. At most 3 × limit index entries are read
 * and no table row; the bodies are read afterwards, one by one, only while the page has room.
 */
function pendingSeqs(core: HubCore, box: Mailbox, afterSeq: number, limit: number): number[] {
  const free = `SELECT seq FROM entries
    WHERE to_agent = @agent AND to_session IS NULL AND state = 'pending' AND claimed_session IS NULL AND seq > @after ORDER BY seq LIMIT @limit`;
  const sql =
    box.sessionId === null
      ? free
      : `SELECT seq FROM (
           SELECT * FROM (SELECT seq FROM entries
             WHERE to_session = @session AND state = 'pending' AND seq > @after ORDER BY seq LIMIT @limit)
           UNION ALL SELECT * FROM (${free})
           UNION ALL SELECT * FROM (SELECT seq FROM entries
             WHERE claimed_session = @session AND state = 'pending' AND seq > @after ORDER BY seq LIMIT @limit)
         ) ORDER BY seq LIMIT @limit`;
  const rows = core.db
    .prepare(sql)
    .all({ agent: box.agentId, after: afterSeq, limit, ...(box.sessionId === null ? {} : { session: box.sessionId }) }) as { seq: number }[];
  return rows.map((r) => r.seq);
}

/**
 * The next page of what a drain or push hands over after `afterSeq`, oldest first, claiming it
 * in the same transaction: for a session, its own unacknowledged entries plus principal entries
 * it claims now (first-claim-wins); for the principal mailbox, principal entries no session has
 * claimed. Bounded by count AND bytes, always at least one entry when any is pending, so an
 * entry of any legal size makes progress; the rows read are bounded by the page, never by the
 * backlog behind it. The caller continues from the last row's seq.
 */
export function pendingPage(core: HubCore, box: Mailbox, afterSeq: number, bound: PageBound): EntryRow[] {
  return core.db.transaction((): EntryRow[] => {
    const seqs = pendingSeqs(core, box, afterSeq, bound.limit);
    const bySeq = core.db.prepare('SELECT * FROM entries WHERE seq = ?');
    const claim = core.db.prepare('UPDATE entries SET claimed_session = ? WHERE seq = ? AND claimed_session IS NULL');
    const out: EntryRow[] = [];
    let bytes = 0;
    for (const seq of seqs) {
      const row = bySeq.get(seq) as EntryRow | undefined;
      if (row === undefined) continue;
      bytes += deliveryBytes(row);
      if (out.length > 0 && bytes > bound.maxBytes) break;
      if (box.sessionId !== null && row.to_session === null && row.claimed_session === null) {
        if (claim.run(box.sessionId, seq).changes !== 1) continue;
        row.claimed_session = box.sessionId;
      }
      out.push(row);
    }
    return out;
  })();
}

/** Whether `pendingPage` would hand anything over now; a read that claims nothing. */
export function hasPending(core: HubCore, box: Mailbox): boolean {
  return pendingSeqs(core, box, 0, 1).length > 0;
}

/** A session ended: its claimed, unacknowledged principal entries go back to the principal mailbox (§12). */
export function releaseClaims(core: HubCore, sessionId: string, agentId: string): void {
  const changed = core.db.prepare(`UPDATE entries SET claimed_session = NULL WHERE claimed_session = ? AND state = 'pending'`).run(sessionId).changes;
  if (changed > 0) core.bus.released.emit(agentId);
}

export function setEntryState(core: HubCore, id: string, state: EntryRow['state']): void {
  core.db.prepare('UPDATE entries SET state = ? WHERE id = ?').run(state, id);
}

/**
 * Readdress an entry to its agent's principal mailbox, keeping its id, so a consumer that
 * already spooled it dedups the redelivery instead of printing it twice.
 */
export function moveToPrincipal(core: HubCore, row: EntryRow): void {
  const entry = { ...entryOf(row), to: formatAddress(row.to_agent, null) };
  core.db.prepare('UPDATE entries SET to_session = NULL, claimed_session = NULL, body = ? WHERE id = ?').run(JSON.stringify(entry), row.id);
  core.bus.released.emit(row.to_agent);
}
