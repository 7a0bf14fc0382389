import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatAddress } from '../../../src/hub/contract/index.js';
import { Gate } from '../../../src/hub/server/coalesce.js';
import { insertEntry, readPages } from '../../../src/hub/server/entries.js';
import { PageReader } from '../../../src/hub/server/page-reader.js';
import type { HubServer } from '../../../src/hub/server/server.js';
import type { Sql } from '../../../src/hub/server/sql.js';
import { inProcessHub, notifyEntry } from '../../integration/hub/in-process.js';

// Issue 14 (session 8): on PostgreSQL a batched page read waits for a gate permit and then for a
// pool connection (stream connects may hold the rest of stream work's share). The streams woken
// while it waits for EITHER go into its one statement: it takes its batch once it has the
// connection. Counted: statements run and streams per statement, never times. The store is a real
// (SQLite) one; only the moment the pool admits the read is held back by the test.

const agentId = 'agt_reader';
const boxes = ['sess_a', 'sess_b', 'sess_c'].map((sessionId) => ({ agentId, sessionId }));
const bound = { limit: 100, maxBytes: 1 << 20 };
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('PageReader: the streams woken while a read waits go into its statement', () => {
  let dir: string;
  let hub: HubServer;
  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'oh-hai-page-reader-'));
    hub = await inProcessHub(dir);
    await hub.core.store.write(async (tx) => {
      for (const box of boxes) await insertEntry(tx, notifyEntry(formatAddress(agentId, box.sessionId), `to ${box.sessionId}`), box, null);
    });
  });
  afterAll(async () => {
    await hub?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** A reader whose first read's pool connection comes only when `admit` is called; the statements it runs, counted. */
  function reader() {
    let admit!: () => void;
    const admitted = new Promise<void>((resolve) => (admit = resolve));
    let first = true;
    const statements: number[] = [];
    const read = hub.core.store.read;
    const counting: Sql = {
      ...read,
      all: <T>(sql: string, ...params: Parameters<Sql['all']>[1][]) => {
        statements.push((sql.match(/ AS box,/g) ?? []).length);
        return read.all<T>(sql, ...params);
      },
    };
    const batches: number[] = [];
    const store = {
      reading: async <T>(fn: (sql: Sql) => Promise<T>): Promise<T> => {
        if (first) {
          first = false;
          await admitted;
        }
        return fn(counting);
      },
    };
    // The statement of a SQLite store (the Hub's is PostgreSQL's, one text for any count: test/integration/cluster/page-reads.test.ts).
    return { pages: new PageReader(store, new Gate(4), (n) => batches.push(n), readPages), admit, statements, batches };
  }

  it('one statement for three streams woken in three turns while the first read waited for its connection', async () => {
    const r = reader();
    const a = r.pages.page(boxes[0]!, 0, bound);
    await turn();
    await turn();
    // The first read has its gate permit (4 are free) and waits for a pool connection.
    const b = r.pages.page(boxes[1]!, 0, bound);
    await turn();
    const c = r.pages.page(boxes[2]!, 0, bound);
    await turn();
    expect(r.statements).toEqual([]);
    r.admit();
    const pages = await Promise.all([a, b, c]);
    expect(pages.map((p) => p.rows.map((row) => JSON.parse(row.body).text))).toEqual([['to sess_a'], ['to sess_b'], ['to sess_c']]);
    // ONE statement carried the three; it took them once it had the connection.
    expect(r.batches).toEqual([3]);
    expect(r.statements).toEqual([3]);
  });

  it('a read admitted at once takes only what was woken by then', async () => {
    const r = reader();
    r.admit();
    const a = r.pages.page(boxes[0]!, 0, bound);
    await a;
    const [b, c] = [r.pages.page(boxes[1]!, 0, bound), r.pages.page(boxes[2]!, 0, bound)];
    await Promise.all([b, c]);
    expect(r.batches).toEqual([1, 2]);
  });
});
