import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Entry } from '../../../src/hub/contract/index.js';
import { formatAddress } from '../../../src/hub/contract/index.js';
import type { HubCore } from '../../../src/hub/server/core.js';
import { deliveryBytes, insertEntry, pendingPage, type EntryRow, type Mailbox } from '../../../src/hub/server/entries.js';
import type { HubServer } from '../../../src/hub/server/server.js';
import type { Param, Tx } from '../../../src/hub/server/sql.js';
import { readSqlitePage } from '../../../src/hub/server/sqlite-pages.js';
import { inProcessHub, notifyEntry } from './in-process.js';

// Issue 19: a backlog of n used to cost O(n²) rows read (every page re-read and sorted the whole
// mailbox). Pages are keyset reads now. Counted, never timed: the rows each page's statements
// return, and the query plan of every statement a page runs (an index range that starts at the
// cursor, no scan of the table), so the quadratic read cannot come back unnoticed.

const BACKLOG = 10_000;
const LIMIT = 100;

/** Every statement a unit ran, with the rows its runs returned. */
interface Counted {
  sql: string;
  rows: number;
  runs: number;
}

/** Run `fn` in one unit whose statements are counted. */
async function counted<T>(core: HubCore, fn: (tx: Tx) => Promise<T>): Promise<{ value: T; counted: Counted[] }> {
  const seen = new Map<string, Counted>();
  const count = (sql: string, rows: number) => {
    let c = seen.get(sql);
    if (!c) seen.set(sql, (c = { sql, rows: 0, runs: 0 }));
    c.runs += 1;
    c.rows += rows;
  };
  const value = await core.store.write((tx) =>
    fn({
      ...tx,
      get: async <R>(sql: string, ...p: Param[]) => {
        const out = await tx.get<R>(sql, ...p);
        count(sql, out === null ? 0 : 1);
        return out;
      },
      all: async <R>(sql: string, ...p: Param[]) => {
        const out = await tx.all<R>(sql, ...p);
        count(sql, out.length);
        return out;
      },
      run: async (sql: string, ...p: Param[]) => {
        count(sql, 0);
        return tx.run(sql, ...p);
      },
    }),
  );
  return { value, counted: [...seen.values()] };
}

const message = (to: string, i: number): Entry => notifyEntry(to, `backlog ${i}`);

describe('mailbox pages are keyset reads: rows read per page are bounded by the page, not by the backlog', () => {
  let dir: string;
  let hub: HubServer;
  let core: HubCore;
  const agentId = 'agt_reader';
  const session = 'sess_reader';
  const other = 'sess_other';

  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'oh-hai-paging-'));
    hub = await inProcessHub(dir);
    core = hub.core;
    await core.store.write(async (tx) => {
      // The reading session is active: principal mail is claimed only for a live session.
      await tx.run(
        `INSERT INTO sessions (id, agent_id, client_key, state, lease_seconds, expires_at, last_renewed_at, created_at) VALUES (?, ?, 'k', 'active', 900, ?, ?, ?)`,
        session,
        agentId,
        tx.now + 900_000,
        tx.now,
        tx.now,
      );
      // The backlog: principal entries, the session's own entries, and noise the page must not
      // read — principal entries another session claimed, and another agent's mail.
      for (let i = 0; i < BACKLOG; i++) {
        if (i % 2 === 0) await insertEntry(tx, message(formatAddress(agentId, null), i), { agentId, sessionId: null }, null);
        else await insertEntry(tx, message(formatAddress(agentId, session), i), { agentId, sessionId: session }, null);
        const noise = message(formatAddress(agentId, null), i);
        await insertEntry(tx, noise, { agentId, sessionId: null }, null);
        await tx.run('UPDATE entries SET claimed_session = ? WHERE id = ?', other, noise.id);
        await insertEntry(tx, message(formatAddress('agt_else', null), i), { agentId: 'agt_else', sessionId: null }, null);
      }
    });
  }, 120_000);

  afterAll(async () => {
    await hub?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  // First, while no principal entry is claimed yet: the stream's reader on SQLite (a statement per
  // keyset arm, then the page's rows by seq) reads the same backlog, claiming nothing.
  it(`a stream's page on SQLite reads the ${BACKLOG}-entry backlog with four statements a page, each returning at most a page of rows`, async () => {
    const box: Mailbox = { agentId, sessionId: session };
    const read: EntryRow[] = [];
    let after = 0;
    let worstRows = 0;
    let worstStatements = 0;
    const sqls = new Set<string>();
    for (;;) {
      const { value: page, counted: stats } = await counted(core, (tx) => readSqlitePage(tx, box, after, { limit: LIMIT, maxBytes: 1024 * 1024 }));
      expect(page.more).toBe(page.rows.length === LIMIT);
      for (const c of stats) sqls.add(c.sql);
      if (page.rows.length === 0) break;
      worstRows = Math.max(worstRows, ...stats.map((c) => c.rows));
      worstStatements = Math.max(
        worstStatements,
        stats.reduce((n, c) => n + c.runs, 0),
      );
      read.push(...page.rows);
      after = page.rows[page.rows.length - 1]!.seq;
    }
    console.log(`backlog ${BACKLOG} on the SQLite stream reader: worst page ${worstStatements} statements, at most ${worstRows} rows from one`);
    expect(read).toHaveLength(BACKLOG);
    expect(read.map((r) => r.seq)).toEqual([...read.map((r) => r.seq)].sort((a, b) => a - b));
    expect(read.every((r) => r.to_session === session || (r.to_session === null && r.claimed_session === null))).toBe(true);
    // Three keyset arms and the rows: no statement returns more than a page's worth, whatever is behind it.
    expect(worstStatements).toBeLessThanOrEqual(4);
    expect(worstRows).toBeLessThanOrEqual(LIMIT);
    for (const sql of sqls) {
      const plan = (await core.store.read.all<{ detail: string }>(`EXPLAIN QUERY PLAN ${sql}`, ...planArgs(sql))).map((p) => p.detail);
      for (const d of plan) {
        expect(d, `${sql}\n${plan.join('\n')}`).toMatch(/^SEARCH entries USING ((COVERING )?INDEX \w+ \(.*seq>\?\)|INTEGER PRIMARY KEY \(rowid=\?\))/);
      }
    }
  });

  it(`claims a ${BACKLOG}-entry backlog page by page, each page's statements returning at most a page of rows`, async () => {
    const box: Mailbox = { agentId, sessionId: session };
    const taken: EntryRow[] = [];
    let after = 0;
    let pages = 0;
    let worstRows = 0;
    let worstStatements = 0;
    const sqls = new Set<string>();
    for (;;) {
      const { value: read, counted: stats } = await counted(core, (tx) => pendingPage(tx, box, after, { limit: LIMIT, maxBytes: 1024 * 1024 }));
      const page = read.rows;
      // A full page says more may follow; the read past the end says nothing does.
      expect(read.more).toBe(page.length === LIMIT);
      const rows = stats.reduce((n, c) => n + c.rows, 0);
      const statements = stats.reduce((n, c) => n + c.runs, 0);
      for (const c of stats) sqls.add(c.sql);
      if (page.length === 0) break;
      pages += 1;
      worstRows = Math.max(worstRows, rows);
      worstStatements = Math.max(worstStatements, statements);
      taken.push(...page);
      after = page[page.length - 1]!.seq;
    }
    console.log(`backlog ${BACKLOG}: ${pages} pages; worst page: ${worstRows} rows returned by ${worstStatements} statement runs`);
    // Everything arrives once, in order, and every principal entry is claimed by this session.
    expect(taken).toHaveLength(BACKLOG);
    expect(new Set(taken.map((r) => r.id)).size).toBe(BACKLOG);
    expect(taken.map((r) => r.seq)).toEqual([...taken.map((r) => r.seq)].sort((a, b) => a - b));
    expect(taken.every((r) => r.to_session === session || r.claimed_session === session)).toBe(true);
    expect(pages).toBe(BACKLOG / LIMIT);
    // One page read (≤ limit rows) and one set-based claim (≤ limit seqs back), whatever the page's size.
    expect(worstRows).toBeLessThanOrEqual(2 * LIMIT);
    expect(worstStatements).toBeLessThanOrEqual(2);

    // The principal mailbox's page too (another agent's, so nothing above is disturbed).
    const principal = await counted(core, (tx) => pendingPage(tx, { agentId: 'agt_else', sessionId: null }, 0, { limit: 1, maxBytes: 1 }));
    for (const c of principal.counted) sqls.add(c.sql);
    // Rows RETURNED are bounded above; rows READ are bounded by the plan: every statement a page
    // runs reaches the entries table through an index range that starts at the keyset cursor,
    // or point lookups of the page's own seqs (primary key, or an index ending in seq), never a
    // scan that would read the rows it skips.
    for (const sql of sqls) {
      const plan = (await core.store.read.all<{ detail: string }>(`EXPLAIN QUERY PLAN ${sql}`, ...planArgs(sql))).map((p) => p.detail);
      const touches = plan.filter((d) => /\bentries\b/.test(d));
      expect(touches.length, `${sql}\n${plan.join('\n')}`).toBeGreaterThan(0);
      for (const d of touches) {
        expect(d, `${sql}\n${plan.join('\n')}`).toMatch(
          /^SEARCH entries USING (COVERING INDEX \w+ \(.*(seq>\?|seq=\? AND rowid(=\?|>\? AND rowid<\?))\)|INTEGER PRIMARY KEY \(rowid=\?\))/,
        );
      }
    }
  });

  it('bounds a page by bytes as well as by count, and always hands over at least one entry', async () => {
    const box: Mailbox = { agentId: 'agt_else', sessionId: null };
    const first = await core.store.write((tx) => pendingPage(tx, box, 0, { limit: LIMIT, maxBytes: 1 }));
    const small = first.rows;
    expect(small).toHaveLength(1);
    // Stopped by its bytes, not because nothing else was pending.
    expect(first.more).toBe(true);
    // The other agent's first entries are all alike in size: a budget of five and a half holds five.
    const each = deliveryBytes(small[0]!);
    const some = (await core.store.write((tx) => pendingPage(tx, box, 0, { limit: LIMIT, maxBytes: 5.5 * each }))).rows;
    expect(some).toHaveLength(5);
    expect(some.reduce((n, r) => n + deliveryBytes(r), 0)).toBeLessThanOrEqual(5.5 * each);
  });
});

/** Placeholder values for a statement's parameters, so its plan can be explained. */
const planArgs = (sql: string): Param[] => Array.from(sql.matchAll(/\?/g), () => 1);
