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

/**
 * What a drain or push hands over, oldest first: for a session, its own unacknowledged
 * entries plus principal entries it claims now (first-claim-wins); for the principal
 * drain, unacknowledged principal entries no session has claimed. `skip` holds ids a
 * stream already pushed on this connection.
 */
export function takePending(core: HubCore, agentId: string, sessionId: string | null, limit: number, skip?: ReadonlySet<string>): EntryRow[] {
  return core.db.transaction((): EntryRow[] => {
    const principal = core.db
      .prepare(
        `SELECT * FROM entries WHERE to_agent = ? AND to_session IS NULL AND state = 'pending'
           AND (claimed_session IS NULL OR claimed_session = ?) ORDER BY seq`,
      )
      .all(agentId, sessionId) as EntryRow[];
    const own =
      sessionId === null
        ? []
        : (core.db.prepare(`SELECT * FROM entries WHERE to_session = ? AND state = 'pending' ORDER BY seq`).all(sessionId) as EntryRow[]);
    const rows = [...own, ...principal].sort((x, y) => x.seq - y.seq);
    const out: EntryRow[] = [];
    const claim = core.db.prepare('UPDATE entries SET claimed_session = ? WHERE id = ? AND claimed_session IS NULL');
    for (const row of rows) {
      if (out.length >= limit) break;
      if (skip?.has(row.id)) continue;
      if (sessionId !== null && row.to_session === null && row.claimed_session === null) {
        if (claim.run(sessionId, row.id).changes !== 1) continue;
        row.claimed_session = sessionId;
      }
      out.push(row);
    }
    return out;
  })();
}

/** Whether `takePending` would hand anything over now; a read that claims nothing. */
export function hasPending(core: HubCore, agentId: string, sessionId: string | null): boolean {
  const principal = core.db
    .prepare(
      `SELECT 1 FROM entries WHERE to_agent = ? AND to_session IS NULL AND state = 'pending'
         AND (claimed_session IS NULL OR claimed_session = ?) LIMIT 1`,
    )
    .get(agentId, sessionId);
  if (principal !== undefined) return true;
  return sessionId !== null && core.db.prepare(`SELECT 1 FROM entries WHERE to_session = ? AND state = 'pending' LIMIT 1`).get(sessionId) !== undefined;
}

/** A session ended: its claimed, unacknowledged principal entries go back to the principal mailbox (§12). */
export function releaseClaims(core: HubCore, sessionId: string, agentId: string): void {
  const changed = core.db.prepare(`UPDATE entries SET claimed_session = NULL WHERE claimed_session = ? AND state = 'pending'`).run(sessionId).changes;
  if (changed > 0) core.bus.mail.emit(agentId);
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
  core.bus.mail.emit(row.to_agent);
}
