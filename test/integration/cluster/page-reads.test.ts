import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatAddress } from '../../../src/hub/contract/index.js';
import { Gate } from '../../../src/hub/server/coalesce.js';
import { insertEntry, readPage } from '../../../src/hub/server/entries.js';
import { PageReader } from '../../../src/hub/server/page-reader.js';
import { storeOnOneConnection, type OneConnection } from '../../helpers/pg-store.js';
import { notifyEntry } from '../hub/in-process.js';

// Issue 14 (session 13): the batched stream page read was a statement text per count of streams
// (padded to powers of two), and PostgreSQL plans each text once per pool connection when it first
// runs there — 40–285 ms for the reads of 8–32 streams on a busy database, with every push of that
// read waiting. It is one text now, whatever the count: counted from the connection's own
// pg_prepared_statements, never timed. Each stream's page must still be what reading it alone gives.

const agentId = 'agt_reads';
const sessions = Array.from({ length: 20 }, (_, i) => `sess_${String(i).padStart(2, '0')}`);
const bound = { limit: 100, maxBytes: 1 << 20 };
const text = (body: string) => (JSON.parse(body) as { text: string }).text;

describe('PostgreSQL: the pages of any number of streams are read by one statement text', () => {
  let store: OneConnection['store'];
  let close: () => Promise<void>;
  beforeAll(async () => {
    ({ store, close } = await storeOnOneConnection());
    await store.write(async (tx) => {
      // Every other session has mail of its own (two entries); one principal entry may go to any.
      for (const [i, s] of sessions.entries())
        if (i % 2 === 0) for (const n of [0, 1]) await insertEntry(tx, notifyEntry(formatAddress(agentId, s), `${s} ${n}`), { agentId, sessionId: s }, null);
      await insertEntry(tx, notifyEntry(formatAddress(agentId, null), 'principal'), { agentId, sessionId: null }, null);
    });
  });
  afterAll(() => close?.());

  it('reads of 1, 3, 9 and 20 streams run ONE prepared text, each page the one read alone gives', async () => {
    const reader = new PageReader(store.as({ name: 'push', lane: 'page' }), new Gate(4), () => {});
    const got: Array<Array<{ box: { agentId: string; sessionId: string }; afterSeq: number; texts: string[] }>> = [];
    // The first stream of each read is past its first entry.
    const { after } = (await store.read.get<{ after: number }>('SELECT CAST(MIN(seq) AS INTEGER) AS after FROM entries WHERE to_session = ?', sessions[0]!))!;
    for (const count of [1, 3, 9, 20]) {
      // Woken in one turn: one read.
      const boxes = sessions.slice(0, count).map((sessionId) => ({ agentId, sessionId }));
      const pages = await Promise.all(boxes.map((box, i) => reader.page(box, i === 0 ? after : 0, bound)));
      got.push(pages.map((p, i) => ({ box: boxes[i]!, afterSeq: i === 0 ? after : 0, texts: p.rows.map((r) => text(r.body)) })));
    }
    const reads = await store.read.all<{ runs: number }>(
      "SELECT CAST(generic_plans + custom_plans AS INTEGER) AS runs FROM pg_prepared_statements WHERE statement LIKE '%wanted AS MATERIALIZED%' AND statement NOT LIKE '%pg_prepared_statements%'",
    );
    expect(reads).toEqual([{ runs: 4 }]);

    expect(got[1]!.map((p) => p.texts)).toEqual([['sess_00 1', 'principal'], ['principal'], ['sess_02 0', 'sess_02 1', 'principal']]);
    for (const read of got) for (const p of read) expect(p.texts).toEqual((await readPage(store.read, p.box, p.afterSeq, bound)).rows.map((r) => text(r.body)));
  });
});
