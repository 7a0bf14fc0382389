import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storeOnOneConnection, type OneConnection } from '../../helpers/pg-store.js';
import { sql } from '../../helpers/postgres.js';

// Issue 14: planning the Hub's statements cost the database more CPU than running them (the
// stream page read: ~0.9 ms to plan, ~0.3 ms to run). The store sends each statement text as a
// named prepared statement, so a connection parses and plans it once. Counted from the
// connection's own pg_prepared_statements (how many times each was run), never timed.

describe('the PostgreSQL store prepares each statement once per connection', () => {
  let db: OneConnection['db'];
  let pool: pg.Pool;
  let store: OneConnection['store'];
  let close: () => Promise<void>;
  beforeAll(async () => {
    ({ db, pool, store, close } = await storeOnOneConnection());
  });
  afterAll(() => close?.());

  /** This connection's prepared statements whose text mentions `table`, with how many times each ran. */
  const preparedOn = async (table: string) =>
    (
      await store.read.all<{ name: string; statement: string; runs: number }>(
        'SELECT name, statement, CAST(generic_plans + custom_plans AS INTEGER) AS runs FROM pg_prepared_statements WHERE statement LIKE ?',
        `%${table}%`,
      )
    ).filter((r) => !r.statement.includes('pg_prepared_statements'));

  it('a read and a unit statement run 7 times are each parsed once and run 7 times', async () => {
    for (let i = 0; i < 7; i++) {
      expect(await store.read.get<{ n: number }>('SELECT CAST(COUNT(*) AS INTEGER) AS n FROM agents WHERE id = ?', `agt_${i}`)).toEqual({ n: 0 });
      await store.write((tx) => tx.run('UPDATE sessions SET seen_at = ? WHERE id = ?', tx.now, `sess_${i}`));
    }
    const agents = await preparedOn('FROM agents');
    expect(agents.map((r) => r.runs)).toEqual([7]);
    expect(agents[0]!.statement).toContain('WHERE id = $1');
    expect((await preparedOn('UPDATE sessions')).map((r) => r.runs)).toEqual([7]);
  });

  it('a statement is described on its first run on a connection only: later runs are bound and executed, their rows built from the columns it remembered', async () => {
    const c = await pool.connect();
    const wire = (c as unknown as { connection: { describe: (...a: unknown[]) => void } }).connection;
    c.release();
    const describe = wire.describe.bind(wire);
    let described = 0;
    wire.describe = (...a: unknown[]) => {
      described += 1;
      describe(...a);
    };
    try {
      for (let i = 0; i < 5; i++) {
        expect(await store.read.get('SELECT ? AS a, CAST(? AS INTEGER) AS b, NULL AS c', `x${i}`, i)).toEqual({ a: `x${i}`, b: i, c: null });
        expect(await store.write((tx) => tx.run('UPDATE sessions SET seen_at = seen_at WHERE id = ?', `none_${i}`))).toBe(0);
      }
      // One for each statement: the read, and the UPDATE (no rows: remembered as such).
      expect(described).toBe(2);
    } finally {
      wire.describe = describe;
    }
  });

  it('a statement whose columns changed under it (a newer instance migrated) is prepared anew: the read answers, the unit runs again', async () => {
    const read = () => store.read.all<Record<string, unknown>>('SELECT * FROM operator_stops WHERE agent_id = ?', 'agt_x');
    const unit = () => store.write((tx) => tx.all<Record<string, unknown>>('SELECT * FROM operator_stops WHERE client_key = ?', 'k'));
    await read();
    await unit();
    // What a later schema version might do: a column more under `SELECT *`.
    await sql(db.url, 'ALTER TABLE operator_stops ADD COLUMN x_added TEXT');
    // Each would fail with 0A000 "cached plan must not change result type" on the old connection.
    expect(await read()).toEqual([]);
    expect(await unit()).toEqual([]);
    expect(await read()).toEqual([]);
  });
});
