import pg from 'pg';
import { Lanes } from '../../src/hub/server/lanes.js';
import { migrate } from '../../src/hub/server/postgres/schema.js';
import { postgresStore } from '../../src/hub/server/postgres/store.js';
import { freshDatabase } from './postgres.js';

export interface OneConnection {
  db: Awaited<ReturnType<typeof freshDatabase>>;
  pool: pg.Pool;
  store: ReturnType<typeof postgresStore>;
  close(): Promise<void>;
}

/**
 * The PostgreSQL store on a fresh, migrated database over ONE pooled connection: every statement
 * runs on the same backend, so what that backend counts (its prepared statements, its table
 * statistics) is the store's whole work.
 */
export async function storeOnOneConnection(): Promise<OneConnection> {
  const db = await freshDatabase();
  const pool = new pg.Pool({ connectionString: db.url, max: 1 });
  const c = await pool.connect();
  await migrate(c);
  c.release();
  const clock = { now: () => Date.now(), monotonic: () => performance.now() };
  const store = postgresStore({
    pool,
    types: pg.types,
    lanes: new Lanes(1, 1),
    local: clock,
    offsetMs: 0,
    wake: () => {},
    notify: async () => {},
    committed: () => {},
    effectFailed: (e) => {
      throw e;
    },
  });
  return {
    db,
    pool,
    store,
    close: async () => {
      await store.close();
      await db.drop();
    },
  };
}
