import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatAddress } from '../../../src/hub/contract/index.js';
import { insertEntry, readSessionPages } from '../../../src/hub/server/entries.js';
import { storeOnOneConnection, type OneConnection } from '../../helpers/pg-store.js';
import { notifyEntry } from '../hub/in-process.js';

// Issue 14 (session 17): the batched stream page read's generic plan is made once per pool connection, at
// its first run. PostgreSQL takes json_to_recordset to return 100 rows, so on a table of a few entries the
// plan was a hash join over two sequential scans of entries (the sizes, then the rows) — kept while the
// table grew: at 10,000 streams every page read of the bench read every entry of the run twice. Read
// from the connection's own cached plan (EXPLAIN EXECUTE), never timed.

const agentId = 'agt_plan';
const bound = { limit: 100, maxBytes: 1 << 20 };

describe('PostgreSQL: the batched page read finds its entries by seq, whatever the table held when it was planned', () => {
  let store: OneConnection['store'];
  let close: () => Promise<void>;
  beforeAll(async () => {
    ({ store, close } = await storeOnOneConnection());
    await store.write(async (tx) => {
      for (const s of ['sess_a', 'sess_b']) await insertEntry(tx, notifyEntry(formatAddress(agentId, s), `${s} 0`), { agentId, sessionId: s }, null);
    });
  });
  afterAll(() => close?.());

  it("plans index lookups on a table of two entries, as the Hub's pool does (a generic plan at the first run)", async () => {
    await store.read.run('SET plan_cache_mode = force_generic_plan');
    const pages = await readSessionPages(store.read, [
      { box: { agentId, sessionId: 'sess_a' }, afterSeq: 0, bound },
      { box: { agentId, sessionId: 'sess_b' }, afterSeq: 0, bound },
    ]);
    expect(pages.map((p) => p.rows.map((r) => r.to_session))).toEqual([['sess_a'], ['sess_b']]);
    const { name } = (await store.read.get<{ name: string }>(
      "SELECT name FROM pg_prepared_statements WHERE statement LIKE '%json_to_recordset%' AND statement NOT LIKE '%pg_prepared_statements%'",
    ))!;
    const requests = JSON.stringify([{ box: 0, agent: agentId, session: 'sess_a', after_seq: 0, lim: 100, bound: 1 << 20 }]);
    const plan = (await store.read.all<{ 'QUERY PLAN': string }>(`EXPLAIN (COSTS OFF) EXECUTE ${name}('${requests}', 0)`)).map((r) => r['QUERY PLAN']);
    expect(plan.join('\n')).toMatch(/Index Scan using entries_pkey/);
    expect(plan.filter((line) => /Seq Scan on entries/.test(line))).toEqual([]);
  });
});
