import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Entry } from '../../../src/hub/contract/index.js';
import { formatAddress } from '../../../src/hub/contract/index.js';
import { defaultHubConfig } from '../../../src/hub/server/config.js';
import type { HubCore } from '../../../src/hub/server/core.js';
import { insertEntry, pendingPage, type EntryRow, type Mailbox } from '../../../src/hub/server/entries.js';
import { newId } from '../../../src/hub/server/ids.js';
import { createHubServer, type HubServer } from '../../../src/hub/server/server.js';
import { systemClock } from '../../../src/util/clock.js';

// Issue 19: a backlog of n used to cost O(n²) rows read (every page re-read and sorted the whole
// mailbox). Pages are keyset reads now. Counted, never timed: the rows each page's statements
// return, and the query plan of every statement a page runs (an index range that starts at the
// cursor, no scan of the table), so the quadratic read cannot come back unnoticed.

const BACKLOG = 10_000;
const LIMIT = 100;

/** Every statement prepared on the store, with the rows its runs returned. */
interface Counted {
  sql: string;
  rows: number;
  runs: number;
}

function countStatements(core: HubCore): { counted: Counted[]; reset(): void } {
  let counted: Counted[] = [];
  const db = core.db;
  const prepare = db.prepare.bind(db);
  const wrapped = (sql: string) => {
    const st = prepare(sql);
    const c: Counted = { sql, rows: 0, runs: 0 };
    counted.push(c);
    return new Proxy(st, {
      get(target, key, receiver) {
        const v: unknown = Reflect.get(target, key, receiver);
        if (typeof v !== 'function') return v;
        if (key === 'all')
          return (...args: unknown[]) => {
            const out = (v as (...a: unknown[]) => unknown[]).apply(target, args);
            c.runs += 1;
            c.rows += out.length;
            return out;
          };
        if (key === 'get')
          return (...args: unknown[]) => {
            const out = (v as (...a: unknown[]) => unknown).apply(target, args);
            c.runs += 1;
            if (out !== undefined) c.rows += 1;
            return out;
          };
        if (key === 'run')
          return (...args: unknown[]) => {
            c.runs += 1;
            return (v as (...a: unknown[]) => unknown).apply(target, args);
          };
        return (v as (...a: unknown[]) => unknown).bind(target);
      },
    });
  };
  db.prepare = wrapped as typeof db.prepare;
  return {
    get counted() {
      return counted;
    },
    reset: () => (counted = []),
  };
}

function message(to: string, i: number): Entry {
  return {
    id: newId('ent'),
    kind: 'message',
    from: 'agent:agt_sender',
    to,
    created_at: new Date().toISOString(),
    message_id: newId('msg'),
    intent: 'notify',
    text: `backlog ${i}`,
  };
}

describe('mailbox pages are keyset reads: rows read per page are bounded by the page, not by the backlog', () => {
  let dir: string;
  let hub: HubServer;
  let core: HubCore;
  const agentId = 'agt_reader';
  const session = 'sess_reader';
  const other = 'sess_other';

  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'oh-hai-paging-'));
    hub = await createHubServer({
      config: { ...defaultHubConfig({ dataDir: path.join(dir, 'hub'), signingKey: 'k', version: 'test' }), port: 0 },
      clock: systemClock,
      pid: process.pid,
      log: () => undefined,
    });
    core = hub.core;
    core.db.transaction(() => {
      // The backlog: principal entries, the session's own entries, and noise the page must not
      // read — principal entries another session claimed, and another agent's mail.
      for (let i = 0; i < BACKLOG; i++) {
        if (i % 2 === 0) insertEntry(core, message(formatAddress(agentId, null), i), { agentId, sessionId: null }, null);
        else insertEntry(core, message(formatAddress(agentId, session), i), { agentId, sessionId: session }, null);
        const noise = message(formatAddress(agentId, null), i);
        insertEntry(core, noise, { agentId, sessionId: null }, null);
        core.db.prepare('UPDATE entries SET claimed_session = ? WHERE id = ?').run(other, noise.id);
        insertEntry(core, message(formatAddress('agt_else', null), i), { agentId: 'agt_else', sessionId: null }, null);
      }
    })();
  }, 120_000);

  afterAll(async () => {
    await hub?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it(`claims a ${BACKLOG}-entry backlog page by page, each page's statements returning at most a page of rows`, () => {
    const box: Mailbox = { agentId, sessionId: session };
    const stats = countStatements(core);
    const taken: EntryRow[] = [];
    let after = 0;
    let pages = 0;
    let worstRows = 0;
    let worstStatements = 0;
    const sqls = new Set<string>();
    for (;;) {
      stats.reset();
      const page = pendingPage(core, box, after, { limit: LIMIT, maxBytes: 1024 * 1024 });
      const rows = stats.counted.reduce((n, c) => n + c.rows, 0);
      const statements = stats.counted.reduce((n, c) => n + c.runs, 0);
      for (const c of stats.counted) sqls.add(c.sql);
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
    // One seq read (≤ limit rows), then per entry one row read and at most one claim.
    expect(worstRows).toBeLessThanOrEqual(2 * LIMIT);
    expect(worstStatements).toBeLessThanOrEqual(1 + 2 * LIMIT);

    // The principal mailbox's page too (another agent's, so nothing above is disturbed).
    stats.reset();
    pendingPage(core, { agentId: 'agt_else', sessionId: null }, 0, { limit: 1, maxBytes: 1 });
    for (const c of stats.counted) sqls.add(c.sql);
    // Rows RETURNED are bounded above; rows READ are bounded by the plan: every statement a page
    // runs reaches the entries table through an index range that starts at the keyset cursor or
    // at the primary key, never a scan that would read the rows it skips.
    for (const sql of sqls) {
      const plan = (core.db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...planArgs(sql)) as { detail: string }[]).map((p) => p.detail);
      const touches = plan.filter((d) => /\bentries\b/.test(d));
      expect(touches.length, `${sql}\n${plan.join('\n')}`).toBeGreaterThan(0);
      for (const d of touches) {
        expect(d, `${sql}\n${plan.join('\n')}`).toMatch(/^SEARCH entries USING (COVERING INDEX \w+ \(.*seq>\?\)|INTEGER PRIMARY KEY \(rowid=\?\))/);
      }
    }
  });

  it('bounds a page by bytes as well as by count, and always hands over at least one entry', () => {
    const box: Mailbox = { agentId: 'agt_else', sessionId: null };
    const small = pendingPage(core, box, 0, { limit: LIMIT, maxBytes: 1 });
    expect(small).toHaveLength(1);
    const body = Buffer.byteLength(small[0]!.body);
    const some = pendingPage(core, box, 0, { limit: LIMIT, maxBytes: 5 * (body + 512) });
    expect(some.length).toBeGreaterThanOrEqual(4);
    expect(some.length).toBeLessThanOrEqual(5);
  });
});

/** Placeholder values for a statement's parameters, so its plan can be explained. */
function planArgs(sql: string): unknown[] {
  const named = [...sql.matchAll(/@(\w+)/g)].map((m) => m[1]!);
  if (named.length > 0) return [Object.fromEntries(named.map((n) => [n, n === 'after' || n === 'limit' ? 1 : 'x']))];
  return Array.from(sql.matchAll(/\?/g), () => 1);
}
