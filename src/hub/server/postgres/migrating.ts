import type { Client } from 'pg';
import { databaseMigrating, databaseOutdated } from '../database-errors.js';
import { migrationHolder, schemaVersion, SCHEMA_VERSION } from './schema.js';

/** How often the watch looks: again for a migration found holding the tables, else at the schema's version. */
const RECHECK_MS = 1000;

export interface MigrationWatch {
  /** The error to refuse work with while another instance's migration holds the tables, or for good once the database is newer than this code; null while serving. */
  refusal(): Error | null;
  /** A statement gave up on a lock (55P03): the refusal if a migration holds the tables, null if not (the work may run again). */
  timedOut(): Promise<Error | null>;
  /** Asks the database now (one question shared by whoever asks meanwhile): why the instance cannot serve, or null. */
  check(): Promise<string | null>;
  close(): Promise<void>;
}

/** The probe's own connection: what the watch uses of a node-postgres Client. */
export type ProbeClient = Pick<Client, 'connect' | 'query' | 'end' | 'on'>;

export interface MigrationWatchOptions {
  connect: () => ProbeClient;
  log: (line: string) => void;
  /** A migration let go and left the schema this code's (it rolled back): the work refused meanwhile may be done now. */
  serving: () => void;
  /** The database is newer than this code: everything held open on the instance ends (its clients go to another instance). */
  outdated: () => void;
}

/**
 * Whether another instance's migration holds the tables (a newer version's, in an upgrade), as
 * schema.ts's migrationHolder finds it, and whether one has made the database newer than this code.
 * Asked when a statement's lock wait ran out and by /readyz; once found, the instance refuses work at
 * once and looks again every second until the migration lets go. Then the schema's version decides:
 * still this code's, it serves again; newer, it refuses for good, as a start does (schema.ts migrate),
 * since this code would misread the newer tables. A migration too short for any statement to wait
 * out is found by the version alone, read every second while serving (one row, no pg_locks).
 * Each change is logged once.
 *
 * It asks on a connection of its own (`connect`, opened at the first question and kept): it is
 * asked because the pool's connections are stuck on the migration's locks, by work that holds one
 * of them until it has the answer.
 */
export function migrationWatch(o: MigrationWatchOptions): MigrationWatch {
  let holding: string | null = null;
  let refusing: Error | null = null;
  /** Why this code may not serve the database again; set once. */
  let newer: string | null = null;
  let asking: Promise<string | null> | null = null;
  /** A version read of the timer's is under way: the next tick does not queue another. */
  let versioning = false;
  let conn: Promise<ProbeClient> | null = null;
  let closed = false;

  const connection = (): Promise<ProbeClient> => {
    // A question under way at close opens nothing that would outlive the store.
    if (closed) return Promise.reject(new Error('the migration watch is closed'));
    if (conn !== null) return conn;
    const c = o.connect();
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

  const ask = async <T>(question: (c: ProbeClient) => Promise<T>): Promise<T> => {
    const c = await connection();
    try {
      return await question(c);
    } catch (e) {
      if (conn !== null && (await conn.catch(() => null)) === c) conn = null;
      void c.end().catch(() => undefined);
      throw e;
    }
  };

  const retire = (version: number): void => {
    if (newer !== null) return;
    newer = `the database is at schema version ${version}, newer than this Hub's ${SCHEMA_VERSION}: a newer oh-hai migrated it`;
    o.log(`hub: ${newer}; answering 503 and ending this instance's streams from now on (stop it and run the new version)`);
    holding = null;
    refusing = databaseOutdated(newer);
    clearInterval(timer);
    o.outdated();
  };

  /** Reads the version (false when it could not be read); a newer one retires the instance. */
  const readVersion = async (): Promise<boolean> => {
    try {
      const v = await ask(schemaVersion);
      if (v !== null && v > SCHEMA_VERSION) retire(v);
      return true;
    } catch {
      return false;
    }
  };

  const settle = (why: string | null): void => {
    if (newer !== null) return;
    if (why !== null && holding === null) o.log(`hub: ${why}; answering 503 (Retry-After) until it lets go`);
    const released = why === null && holding !== null;
    holding = why;
    refusing = why === null ? null : databaseMigrating(why);
    if (released) {
      o.log('hub: the migration let go of the tables; serving again');
      o.serving();
    }
  };

  // A probe that fails (the database gone) leaves the state as it was: the work's own errors say the rest.
  const check = (): Promise<string | null> => {
    if (newer !== null || closed) return Promise.resolve(newer ?? holding);
    return (asking ??= ask(migrationHolder)
      // Let go: still refused until the version it left is read (asked again a second later if it could not be).
      .then(async (why) => (why === null && holding !== null && !(await readVersion()) ? holding : why))
      .catch(() => holding)
      .then((why) => {
        asking = null;
        settle(why);
        return newer ?? why;
      }));
  };

  const timer = setInterval(() => {
    if (holding !== null) void check();
    else if (!versioning) {
      versioning = true;
      void readVersion().finally(() => (versioning = false));
    }
  }, RECHECK_MS);
  timer.unref();

  return {
    refusal: () => refusing,
    timedOut: async () => ((await check()) === null ? null : refusing),
    check,
    async close() {
      closed = true;
      clearInterval(timer);
      const c = await conn?.catch(() => null);
      conn = null;
      await c?.end().catch(() => undefined);
    },
  };
}
