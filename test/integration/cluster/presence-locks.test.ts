import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { streamsSeen } from '../../../src/hub/server/sessions.js';
import { storeOnOneConnection, type OneConnection } from '../../helpers/pg-store.js';
import { sql } from '../../helpers/postgres.js';
import { waitFor } from '../../helpers/wait.js';

// Issue 14 (session 13): every 20 s an instance records its held streams' sessions as seen, 500
// sessions a statement. In one unit, every row lock was kept until the last statement's COMMIT,
// and every stream connect renewing one of those sessions waited for it (at 10,000 streams
// 300–500 ms, every connection of stream work's share held by a waiting connect). Each statement
// now commits on its own: while a later one waits, the sessions of the first are renewable and
// already seen. Decided by NOWAIT and by what another connection reads, never by a time.

const ids = Array.from({ length: 600 }, (_, i) => `sess_seen_${String(i).padStart(3, '0')}`);

describe('PostgreSQL: recording held streams as seen holds no session locked past its own statement', () => {
  let db: OneConnection['db'];
  let store: OneConnection['store'];
  let close: () => Promise<void>;
  beforeAll(async () => {
    ({ db, store, close } = await storeOnOneConnection());
    await sql(
      db.url,
      `INSERT INTO sessions (id, agent_id, client_key, state, lease_seconds, expires_at, last_renewed_at, created_at, seen_at)
       SELECT id, 'agt_seen', id, 'active', 900, 0, 0, 0, 0 FROM unnest(CAST($1 AS TEXT[])) AS id`,
      [ids],
    );
  });
  afterAll(() => close?.());

  it('the first 500 sessions are seen and renewable while the statement of the rest waits for a lock', async () => {
    const blocker = new pg.Client({ connectionString: db.url });
    const other = new pg.Client({ connectionString: db.url });
    await blocker.connect();
    await other.connect();
    try {
      // A connect of the second chunk's session, in flight.
      await blocker.query('BEGIN');
      await blocker.query('SELECT id FROM sessions WHERE id = $1 FOR NO KEY UPDATE', [ids[550]]);
      const seen = streamsSeen(
        store,
        ids.map((sessionId) => ({ sessionId, home: null })),
      );
      await waitFor(
        async () =>
          (
            await other.query<{ n: number }>(
              "SELECT CAST(COUNT(*) AS INTEGER) AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%UPDATE sessions SET seen_at%'",
            )
          ).rows[0]!.n > 0 || null,
        { what: 'the second statement waiting for the held session' },
      );
      // A connect renewing a session of the first chunk goes through at once, and sees it seen.
      await other.query('BEGIN');
      const first = await other.query<{ seen_at: string }>('SELECT seen_at FROM sessions WHERE id = $1 FOR NO KEY UPDATE NOWAIT', [ids[0]]);
      expect(Number(first.rows[0]!.seen_at)).toBeGreaterThan(0);
      await other.query('ROLLBACK');
      await blocker.query('ROLLBACK');
      await seen;
      const unseen = await other.query<{ n: number }>("SELECT CAST(COUNT(*) AS INTEGER) AS n FROM sessions WHERE agent_id = 'agt_seen' AND seen_at = 0");
      expect(unseen.rows[0]!.n).toBe(0);
    } finally {
      await blocker.end();
      await other.end();
    }
  });
});
