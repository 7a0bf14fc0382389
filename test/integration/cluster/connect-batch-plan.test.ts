import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectsText } from '../../../src/hub/server/connects.js';
import { storeOnOneConnection, type OneConnection } from '../../helpers/pg-store.js';

// Issue 14 (session 18): the stream connects renewed together are one statement whose requests are a JSON
// table (json_to_recordset), planned once per pool connection at its first run, as the batched page read is.
// PostgreSQL takes a set-returning function to return 100 rows, and a table without statistics to keep 0.5 % of
// its rows for `state = 'active'`: a generic plan could read every active session by sessions_by_state, or
// join the requests by a sequential scan of sessions (every batch then reads every session) — the page read's
// lesson (session 17, page-read-plan.test.ts). Read from the connection's own cached plan (EXPLAIN EXECUTE),
// never timed.

const SESSIONS = 1000;

describe('PostgreSQL: the batched stream connects find their sessions and entries by key', () => {
  let store: OneConnection['store'];
  let close: () => Promise<void>;
  beforeAll(async () => {
    ({ store, close } = await storeOnOneConnection());
    await store.write(async (tx) => {
      await tx.run("INSERT INTO agents (id, label, token_hash, revoked, created_at) VALUES ('agt_plan', 'plan', 'hash', 0, 0)");
      // A deployment in use (or issue 14's bench, whose sessions are registered before their streams connect).
      await tx.run(
        `INSERT INTO sessions (id, agent_id, client_key, state, lease_seconds, expires_at, last_renewed_at, created_at)
         SELECT 'sess_' || n, 'agt_plan', 'ck_' || n, 'active', 300, 9000000000000, 0, 0 FROM generate_series(1, ?) AS n`,
        SESSIONS,
      );
    });
  });
  afterAll(() => close?.());

  it(`plans lookups by key on ${SESSIONS} sessions and no entries, as the Hub's pool does (a generic plan at the first run)`, async () => {
    await store.read.run('SET plan_cache_mode = force_generic_plan');
    const requests = JSON.stringify(
      ['sess_1', 'sess_2'].map((session, i) => ({ i, token: 'hash', session, home: 'h', host: 'x', pid: 1, lim: 100, bound: 1 << 20 })),
    );
    const renewed = await store.once<{ session_id: string }>(connectsText(), [requests, 1]);
    expect(renewed.map((r) => r.session_id).sort()).toEqual(['sess_1', 'sess_2']);
    const { name } = (await store.read.get<{ name: string }>(
      "SELECT name FROM pg_prepared_statements WHERE statement LIKE '%json_to_recordset%renewed%' AND statement NOT LIKE '%pg_prepared_statements%'",
    ))!;
    const plan = (await store.read.all<{ 'QUERY PLAN': string }>(`EXPLAIN (COSTS OFF) EXECUTE ${name}('${requests}', 1)`)).map((r) => r['QUERY PLAN']);
    expect(plan.join('\n')).toMatch(/Index Scan using sessions_pkey/);
    expect(plan.filter((line) => /Seq Scan on (sessions|entries)/.test(line))).toEqual([]);
  });
});
