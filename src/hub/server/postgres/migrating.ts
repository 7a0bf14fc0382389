import type { Client } from 'pg';
import { databaseMigrating } from '../database-errors.js';
import { migrationHolder } from './schema.js';

/** How often an instance that found a migration holding the tables looks again. */
const RECHECK_MS = 1000;

export interface MigrationWatch {
  /** The error to refuse work with while another instance's migration holds the tables; null while serving. */
  refusal(): Error | null;
  /** A statement gave up on a lock (55P03): the refusal if a migration holds the tables, null if not (the work may run again). */
  timedOut(): Promise<Error | null>;
  /** Asks the database now (one question shared by whoever asks meanwhile): why the instance cannot serve, or null. */
  check(): Promise<string | null>;
  close(): Promise<void>;
}

/** The probe's own connection: what the watch uses of a node-postgres Client. */
export type ProbeClient = Pick<Client, 'connect' | 'query' | 'end' | 'on'>;

/**
 * Whether another instance's migration holds the tables (a newer version's, in an upgrade), as
 * schema.ts's migrationHolder finds it. Asked when a statement's lock wait ran out and by /readyz;
 * once found, the instance refuses work at once and looks again every second until the migration
 * lets go, then serves again. Each change is logged once.
 *
 * It asks on a connection of its own (`connect`, opened at the first question and kept): it is
 * asked because the pool's connections are stuck on the migration's locks, by work that holds one
 * of them until it has the answer.
 */
export function migrationWatch(connect: () => ProbeClient, log: (line: string) => void): MigrationWatch {
  let holding: string | null = null;
  let refusing: Error | null = null;
  let asking: Promise<string | null> | null = null;
  let conn: Promise<ProbeClient> | null = null;
  let timer: NodeJS.Timeout | undefined;
  let closed = false;

  const connection = (): Promise<ProbeClient> => {
    if (conn !== null) return conn;
    const c = connect();
    const mine = c.connect().then(() => c);
    conn = mine;
    // A connection that fails is dropped; the next question opens another.
    c.on('error', () => {
      if (conn === mine) conn = null;
    });
    mine.catch(() => {
      if (conn === mine) conn = null;
    });
    return mine;
  };

  const probe = async (): Promise<string | null> => {
    if (closed) return holding;
    const c = await connection();
    try {
      return await migrationHolder(c);
    } catch (e) {
      if (conn !== null && (await conn.catch(() => null)) === c) conn = null;
      void c.end().catch(() => undefined);
      throw e;
    }
  };

  const settle = (why: string | null): void => {
    if (why !== null && holding === null) log(`hub: ${why}; answering 503 (Retry-After) until it lets go`);
    if (why === null && holding !== null) log('hub: the migration let go of the tables; serving again');
    holding = why;
    refusing = why === null ? null : databaseMigrating(why);
    clearTimeout(timer);
    if (why !== null && !closed) {
      timer = setTimeout(() => void check(), RECHECK_MS);
      timer.unref();
    }
  };

  // A probe that fails (the database gone) leaves the state as it was, and asks again later if refusing: the work's own errors say the rest.
  const check = (): Promise<string | null> =>
    (asking ??= probe()
      .catch(() => holding)
      .then((why) => {
        asking = null;
        settle(why);
        return why;
      }));

  return {
    refusal: () => refusing,
    timedOut: async () => ((await check()) === null ? null : refusing),
    check,
    async close() {
      closed = true;
      clearTimeout(timer);
      const c = await conn?.catch(() => null);
      conn = null;
      await c?.end().catch(() => undefined);
    },
  };
}
