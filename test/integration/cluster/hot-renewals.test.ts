import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HubCore } from '../../../src/hub/server/core.js';
import { presentStream } from '../../../src/hub/server/sessions.js';
import { storeOnOneConnection, type OneConnection } from '../../helpers/pg-store.js';
import { sql } from '../../helpers/postgres.js';

// Issue 14: every stream connect renews its session's lease (~330 a second at 10,000 streams), and
// every send renews its sender's. A renewal that moves an indexed column makes PostgreSQL write the
// row's new version as a new tuple with an entry in every index of the table; one that moves none
// is a HOT update, in place on the row's page. Counted from the table's statistics, never timed.

describe("a lease renewal updates its session's row in place (HOT) on PostgreSQL", () => {
  let db: OneConnection['db'];
  let store: OneConnection['store'];
  let close: () => Promise<void>;
  beforeAll(async () => {
    ({ db, store, close } = await storeOnOneConnection());
  });
  afterAll(() => close?.());

  const counts = async () =>
    (
      await sql<{ updated: string; hot: string }>(
        db.url,
        `SELECT n_tup_upd AS updated, n_tup_hot_upd AS hot FROM pg_stat_user_tables WHERE relname = 'sessions'`,
      )
    ).map((r) => ({ updated: Number(r.updated), hot: Number(r.hot) }))[0]!;

  it('40 stream connects of one session (renewal, holder seen, first page): 40 updates, every one HOT', async () => {
    await store.write((tx) =>
      tx.run(
        `INSERT INTO sessions (id, agent_id, name, client_key, home, state, lease_seconds, expires_at, last_renewed_at, created_at)
         VALUES ('sess_hot', 'agt_hot', NULL, 'ck', NULL, 'active', 60, ?, ?, ?)`,
        tx.now + 60_000,
        tx.now,
        tx.now,
      ),
    );
    const core = { store } as unknown as HubCore;
    const before = await counts();
    for (let i = 0; i < 40; i++) {
      const renewed = await presentStream(
        core,
        store,
        { agentId: 'agt_hot' },
        'sess_hot',
        { consumer: { home: '/home/a', host: 'host-a', pid: 100 }, connect: true, stream: null },
        { limit: 100, maxBytes: 1 << 20 },
      );
      expect(renewed?.row.id).toBe('sess_hot');
    }
    // The backend reports its counts once idle; forced at the end of this statement's transaction.
    await store.read.get('SELECT 1 AS one FROM (SELECT pg_stat_force_next_flush()) AS flushed');
    const deadline = Date.now() + 20_000;
    let after = await counts();
    while (after.updated - before.updated < 40 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      after = await counts();
    }
    expect(after.updated - before.updated).toBe(40);
    expect(after.hot - before.hot).toBe(40);
  });
});
