import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatAddress } from '../../../src/hub/contract/index.js';
import { deliveryBytes, insertEntry, readPage, readPages, type Mailbox } from '../../../src/hub/server/entries.js';
import type { HubServer } from '../../../src/hub/server/server.js';
import { readSqlitePage } from '../../../src/hub/server/sqlite-pages.js';
import { inProcessHub, notifyEntry } from '../../integration/hub/in-process.js';

// Issue 14: on PostgreSQL the pages of every stream woken together are read by ONE statement
// (page-reader.ts). Each mailbox's page must be exactly what reading it alone gives: its own
// count and byte bound, at least one entry, `more` when it stopped at a bound, and principal mail
// in the page of every session that may claim it.

const agentId = 'agt_pages';
const entry = notifyEntry;

describe('readPages: many mailboxes in one statement', () => {
  let dir: string;
  let hub: HubServer;
  const a: Mailbox = { agentId, sessionId: 'sess_a' };
  const b: Mailbox = { agentId, sessionId: 'sess_b' };
  const empty: Mailbox = { agentId: 'agt_nobody', sessionId: 'sess_nobody' };
  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'oh-hai-read-pages-'));
    hub = await inProcessHub(dir);
    await hub.core.store.write(async (tx) => {
      for (let i = 0; i < 5; i++) await insertEntry(tx, entry(formatAddress(agentId, 'sess_a'), `a${i}`), { agentId, sessionId: 'sess_a' }, null);
      await insertEntry(tx, entry(formatAddress(agentId, null), 'principal'), { agentId, sessionId: null }, null);
      for (let i = 0; i < 3; i++) await insertEntry(tx, entry(formatAddress(agentId, 'sess_b'), `b${i}`), { agentId, sessionId: 'sess_b' }, null);
    });
  });
  afterAll(async () => {
    await hub?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const texts = (rows: Array<{ body: string }>) => rows.map((r) => (JSON.parse(r.body) as { text: string }).text);

  it('gives each mailbox the page it would get alone, under its own bounds', async () => {
    const q = hub.core.store.read;
    const one = await readPage(q, a, 0, { limit: 100, maxBytes: 1 << 20 });
    const each = deliveryBytes(one.rows[0]!);
    const requests = [
      { box: a, afterSeq: 0, bound: { limit: 3, maxBytes: 1 << 20 } },
      { box: b, afterSeq: 0, bound: { limit: 100, maxBytes: 2.5 * each } },
      { box: empty, afterSeq: 0, bound: { limit: 100, maxBytes: 1 << 20 } },
      { box: b, afterSeq: 0, bound: { limit: 100, maxBytes: 1 } },
    ];
    const pages = await readPages(q, requests);
    expect(pages.map((p) => texts(p.rows))).toEqual([['a0', 'a1', 'a2'], ['principal', 'b0'], [], ['principal']]);
    // Stopped at its count, at its bytes, nothing pending, one entry over a tiny budget.
    expect(pages.map((p) => p.more)).toEqual([true, true, false, true]);
    for (const [i, r] of requests.entries()) expect(pages[i]).toEqual(await readPage(q, r.box, r.afterSeq, r.bound));
    // The principal entry is in the page of both sessions that may claim it; the rest of a's after its cursor.
    const later = await readPages(q, [
      { box: a, afterSeq: pages[0]!.rows[2]!.seq, bound: { limit: 100, maxBytes: 1 << 20 } },
      { box: b, afterSeq: 0, bound: { limit: 100, maxBytes: 1 << 20 } },
    ]);
    expect(later.map((p) => texts(p.rows))).toEqual([
      ['a3', 'a4', 'principal'],
      ['principal', 'b0', 'b1', 'b2'],
    ]);
    expect(later.map((p) => p.more)).toEqual([false, false]);
  });

  it('the SQLite stream reader gives exactly the page of the one statement: every mailbox, cursor, count and byte bound', async () => {
    const q = hub.core.store.read;
    const all = await readPage(q, a, 0, { limit: 100, maxBytes: 1 << 20 });
    const each = deliveryBytes(all.rows[0]!);
    const cursors = [0, ...all.rows.map((r) => r.seq)];
    let compared = 0;
    for (const box of [a, b, empty, { agentId, sessionId: null }])
      for (const afterSeq of cursors)
        for (const limit of [1, 2, 3, 100])
          for (const maxBytes of [1, each, 1.5 * each, 2.5 * each, 1 << 20]) {
            const bound = { limit, maxBytes };
            expect(await readSqlitePage(q, box, afterSeq, bound), JSON.stringify({ box, afterSeq, bound })).toEqual(await readPage(q, box, afterSeq, bound));
            compared += 1;
          }
    expect(compared).toBe(4 * cursors.length * 4 * 5);
  });
});
