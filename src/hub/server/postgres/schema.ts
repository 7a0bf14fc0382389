import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { PoolClient } from 'pg';
import { SCHEMA_TOO_NEW } from '../database-errors.js';

/**
 * The PostgreSQL schema, as numbered migrations. Instants are integer milliseconds on the
 * deployment's clock (the database's), like the SQLite store's, so one set of queries
 * serves both. A migration never changes once released: a new one is appended.
 *
 * The SQLite store's schema (../store.ts) is the other text of the same tables. They are kept
 * two texts on purpose (SQLite evolves in place with IF NOT EXISTS, PostgreSQL by numbered
 * migrations that never change once released, so neither can be generated from the other's
 * latest form); test/integration/cluster/schema.test.ts migrates both from empty and proves
 * they agree: the same tables, columns, types, collations (bytes: "C" here, SQLite's BINARY),
 * nullability, keys, unique constraints and indexes. A change to one that is not made to the other fails there.
 */
export const MIGRATIONS: readonly string[] = [
  `
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);

CREATE TABLE agents (
  id TEXT PRIMARY KEY,
  label TEXT NOT NULL,
  token_hash TEXT NOT NULL UNIQUE,
  revoked INTEGER NOT NULL DEFAULT 0,
  created_at BIGINT NOT NULL
);

CREATE TABLE principal_presence (
  agent_id TEXT PRIMARY KEY,
  seen_at BIGINT NOT NULL
);

CREATE TABLE sessions (
  id TEXT PRIMARY KEY,
  agent_id TEXT NOT NULL,
  name TEXT,
  client_key TEXT NOT NULL,
  home TEXT,
  state TEXT NOT NULL,
  lease_seconds DOUBLE PRECISION NOT NULL,
  expires_at BIGINT NOT NULL,
  last_renewed_at BIGINT NOT NULL,
  created_at BIGINT NOT NULL,
  closed_at BIGINT,
  seen_at BIGINT,
  holder_home TEXT,
  holder_host TEXT,
  holder_pid INTEGER,
  holder_since BIGINT,
  holder_seen_at BIGINT
);
CREATE INDEX sessions_by_agent ON sessions (agent_id, state);
CREATE INDEX sessions_by_expiry ON sessions (state, expires_at);

CREATE TABLE operator_stops (
  seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  agent_id TEXT NOT NULL,
  client_key TEXT,
  name TEXT,
  session_id TEXT,
  created_at BIGINT NOT NULL
);
CREATE INDEX operator_stops_by_agent ON operator_stops (agent_id);

CREATE TABLE messages (
  seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  intent TEXT NOT NULL,
  from_addr TEXT NOT NULL,
  from_agent TEXT,
  reply_session TEXT,
  to_addr TEXT NOT NULL,
  to_agent TEXT NOT NULL,
  to_session TEXT,
  text TEXT NOT NULL,
  in_reply_to TEXT,
  created_at BIGINT NOT NULL,
  state TEXT NOT NULL,
  prior TEXT,
  track TEXT NOT NULL,
  destination TEXT NOT NULL,
  response_id TEXT,
  response_text TEXT,
  response_at BIGINT,
  idempotency_key TEXT,
  request_hash TEXT,
  UNIQUE (from_agent, idempotency_key)
);
CREATE INDEX messages_by_sender ON messages (from_agent, seq);
CREATE INDEX messages_by_recipient ON messages (to_agent, seq);
CREATE INDEX messages_open ON messages (state, created_at);

CREATE TABLE entries (
  seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  kind TEXT NOT NULL,
  body TEXT NOT NULL,
  to_agent TEXT NOT NULL,
  to_session TEXT,
  claimed_session TEXT,
  message_id TEXT,
  created_at BIGINT NOT NULL,
  delivered INTEGER NOT NULL DEFAULT 0,
  state TEXT NOT NULL
);
CREATE INDEX entries_by_session ON entries (to_session, state);
CREATE INDEX entries_by_mailbox ON entries (to_agent, to_session, state);
CREATE INDEX entries_by_claim ON entries (claimed_session, state);
CREATE INDEX entries_open ON entries (state, created_at);
`,
  // 2: mailbox pages are keyset reads (entries.ts pendingSeqs), as on the SQLite store: each
  // index ends in seq, so a page is one range scan in seq order that reads no row it skips.
  `
DROP INDEX entries_by_session;
DROP INDEX entries_by_mailbox;
DROP INDEX entries_by_claim;
CREATE INDEX entries_own ON entries (to_session, state, seq);
CREATE INDEX entries_free ON entries (to_agent, to_session, state, claimed_session, seq);
CREATE INDEX entries_claimed ON entries (claimed_session, state, seq);
`,
  // 3: signed-in web inbox sessions live in the database, so a sign-in holds on every instance.
  `
CREATE TABLE web_sessions (
  id_hash TEXT PRIMARY KEY,
  sealed TEXT NOT NULL,
  last_seen_at BIGINT NOT NULL,
  created_at BIGINT NOT NULL
);
CREATE INDEX web_sessions_by_seen ON web_sessions (last_seen_at);
`,
  // 4: the indexes of a session's own mail and of unclaimed principal mail hold only the entries
  // their page query can want (partial indexes): mail to a session never enters the
  // principal-mail one and principal mail never the session one, one index write fewer per
  // insert; and without statistics (a fresh table) the planner read unclaimed principal mail
  // through entries_claimed, whose NULL key held every entry of every session (1,000 index
  // entries scanned per stream page after 1,000 sends). entries_claimed stays whole: the claim's
  // `claimed_session IS NULL` finds its rows through it.
  `
DROP INDEX entries_own;
DROP INDEX entries_free;
CREATE INDEX entries_to_session ON entries (to_session, state, seq) WHERE to_session IS NOT NULL;
CREATE INDEX entries_unclaimed ON entries (to_agent, to_session, state, claimed_session, seq) WHERE to_session IS NULL AND claimed_session IS NULL;
`,
  // 5: entries.canonical is 1 where the body is the entry's canonical JSON (MA2H §12): a delivery
  // is signed over the stored text as it is. NULL on rows of earlier builds (re-serialised when signed).
  `
ALTER TABLE entries ADD COLUMN canonical INTEGER;
`,
  // 6: a lease renewal (every stream connect, every send presenting its session) writes no indexed
  // column, so PostgreSQL updates the row in place on its page (a HOT update: no new entry in any
  // index). sessions_by_expiry held expires_at, which every renewal moves: each renewal wrote a
  // new entry in all three of the table's indexes. The sweep's `state = 'active' AND expires_at <= ?`
  // reads the active sessions through sessions_by_state instead; room is left on each page for the
  // row's next versions.
  `
DROP INDEX sessions_by_expiry;
CREATE INDEX sessions_by_state ON sessions (state);
ALTER TABLE sessions SET (fillfactor = 80);
`,
  // 7: text compares as bytes, as on SQLite. A column of the database's default collation compares
  // through the locale (strcoll on every btree comparison of an id, even in C.UTF-8, which PostgreSQL
  // 15 does not take for "C"), and orders ids as the locale does where SQLite orders them by bytes
  // (the fleet's and the directory's `ORDER BY created_at, id`). A collation alone changes no stored
  // value: the tables are not rewritten, their indexes are rebuilt (under this migration's locks, before
  // the instance serves). And the index of claimed principal mail holds claimed entries only: every
  // entry of session mail wrote a NULL key there that no query reads (releases and the claimed arm ask
  // `claimed_session = ?`; the claim names its rows by seq and its page's span of unclaimed mail).
  `
ALTER TABLE meta ALTER COLUMN key TYPE TEXT COLLATE "C", ALTER COLUMN value TYPE TEXT COLLATE "C";
ALTER TABLE agents ALTER COLUMN id TYPE TEXT COLLATE "C", ALTER COLUMN label TYPE TEXT COLLATE "C",
  ALTER COLUMN token_hash TYPE TEXT COLLATE "C";
ALTER TABLE principal_presence ALTER COLUMN agent_id TYPE TEXT COLLATE "C";
ALTER TABLE sessions ALTER COLUMN id TYPE TEXT COLLATE "C", ALTER COLUMN agent_id TYPE TEXT COLLATE "C",
  ALTER COLUMN name TYPE TEXT COLLATE "C", ALTER COLUMN client_key TYPE TEXT COLLATE "C",
  ALTER COLUMN home TYPE TEXT COLLATE "C", ALTER COLUMN state TYPE TEXT COLLATE "C",
  ALTER COLUMN holder_home TYPE TEXT COLLATE "C", ALTER COLUMN holder_host TYPE TEXT COLLATE "C";
ALTER TABLE operator_stops ALTER COLUMN agent_id TYPE TEXT COLLATE "C", ALTER COLUMN client_key TYPE TEXT COLLATE "C",
  ALTER COLUMN name TYPE TEXT COLLATE "C", ALTER COLUMN session_id TYPE TEXT COLLATE "C";
ALTER TABLE messages ALTER COLUMN id TYPE TEXT COLLATE "C", ALTER COLUMN intent TYPE TEXT COLLATE "C",
  ALTER COLUMN from_addr TYPE TEXT COLLATE "C", ALTER COLUMN from_agent TYPE TEXT COLLATE "C",
  ALTER COLUMN reply_session TYPE TEXT COLLATE "C", ALTER COLUMN to_addr TYPE TEXT COLLATE "C",
  ALTER COLUMN to_agent TYPE TEXT COLLATE "C", ALTER COLUMN to_session TYPE TEXT COLLATE "C",
  ALTER COLUMN text TYPE TEXT COLLATE "C", ALTER COLUMN in_reply_to TYPE TEXT COLLATE "C",
  ALTER COLUMN state TYPE TEXT COLLATE "C", ALTER COLUMN prior TYPE TEXT COLLATE "C",
  ALTER COLUMN track TYPE TEXT COLLATE "C", ALTER COLUMN destination TYPE TEXT COLLATE "C",
  ALTER COLUMN response_id TYPE TEXT COLLATE "C", ALTER COLUMN response_text TYPE TEXT COLLATE "C",
  ALTER COLUMN idempotency_key TYPE TEXT COLLATE "C", ALTER COLUMN request_hash TYPE TEXT COLLATE "C";
DROP INDEX entries_claimed;
ALTER TABLE entries ALTER COLUMN id TYPE TEXT COLLATE "C", ALTER COLUMN kind TYPE TEXT COLLATE "C",
  ALTER COLUMN body TYPE TEXT COLLATE "C", ALTER COLUMN to_agent TYPE TEXT COLLATE "C",
  ALTER COLUMN to_session TYPE TEXT COLLATE "C", ALTER COLUMN claimed_session TYPE TEXT COLLATE "C",
  ALTER COLUMN message_id TYPE TEXT COLLATE "C", ALTER COLUMN state TYPE TEXT COLLATE "C";
CREATE INDEX entries_claims ON entries (claimed_session, state, seq) WHERE claimed_session IS NOT NULL;
ALTER TABLE web_sessions ALTER COLUMN id_hash TYPE TEXT COLLATE "C", ALTER COLUMN sealed TYPE TEXT COLLATE "C";
`,
];

export const SCHEMA_VERSION = MIGRATIONS.length;

/**
 * Every instance takes this session-level advisory lock to migrate, so N starting together migrate once.
 * Its holder holding a table ACCESS EXCLUSIVE is what instances already serving take for a migration
 * under way ({@link migrationHolder}): every version's migrate() takes this lock, so an instance knows
 * a newer version's migration by it.
 */
export const MIGRATION_LOCK = 0x6f68_6169;

/**
 * How long a serving instance's statement waits for a lock before it gives up (55P03): the pool's
 * connections set it at connect (postgres/index.ts). A migration holds its tables for seconds per
 * million rows; a request waiting that long outlives its client's patience and holds a pool
 * connection others need. The Hub's own lock waits (a row another unit holds, a sweep's batch of
 * 0.3–1 s at load 6) are shorter; one that is not is run again (postgres/store.ts) unless a migration
 * is found holding the tables. Over the half of `deadlock_timeout` a migration's try waits at most,
 * so its tries alone do not trip it.
 */
export const SERVING_LOCK_TIMEOUT_MS = 1000;

/** Tries at a migration's table locks before the start is refused (each within half of deadlock_timeout). */
const LOCK_ATTEMPTS = 20;

export interface MigrateOptions {
  /** Tries at each migration's table locks; {@link LOCK_ATTEMPTS} unless a test wants its refusal sooner. */
  attempts?: number;
  /** Hears each try that found a table held (the Hub's log). */
  log?: (line: string) => void;
}

type Client = Pick<PoolClient, 'query'>;

/**
 * Bring the database to {@link SCHEMA_VERSION}, one transaction per migration, under the
 * advisory lock. A database at a higher version was migrated by a newer Hub: refused,
 * since this code would misread its tables.
 *
 * Instances of the previous version may still be serving on the same database, in transactions
 * that take tables in any order (an ack: entries, then messages). A migration that took its tables
 * one statement at a time held one while it waited for the next, and closed a cycle with such a
 * transaction: PostgreSQL aborted the migration, the Hub exited, systemd started it again, and the
 * same happened again (session 19: 8 tries of 8 at 1,000,000 rows). So each migration first takes
 * every table it names, and waits for all of them at most half of deadlock_timeout in total: it
 * gives them all back before any other backend's deadlock check can run (its wait on a table the
 * migration holds started after the migration began waiting), and a wait of its own never lasts
 * long enough to run one. Only then does the migration's text run, waiting for nothing. A try that
 * finds a table held rolls back (the transactions queued behind it go on), backs off and tries again.
 */
export async function migrate(client: Client, o: MigrateOptions = {}): Promise<{ from: number; to: number }> {
  // The pool's connections give up on a lock after SERVING_LOCK_TIMEOUT_MS; a start waits for another's migration whole.
  await client.query('SET lock_timeout = 0');
  await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
  try {
    await client.query('CREATE TABLE IF NOT EXISTS oh_hai_schema (version INTEGER NOT NULL)');
    const found = await client.query<{ version: number }>('SELECT version FROM oh_hai_schema');
    const from = found.rows[0]?.version ?? 0;
    if (found.rows.length === 0) await client.query('INSERT INTO oh_hai_schema (version) VALUES (0)');
    if (from > SCHEMA_VERSION) {
      throw Object.assign(
        new Error(
          `the database has schema version ${from}, newer than this Hub's ${SCHEMA_VERSION}: a newer oh-hai migrated it; run that version (or newer) on every instance`,
        ),
        { code: SCHEMA_TOO_NEW },
      );
    }
    if (from < SCHEMA_VERSION) {
      const budgetMs = Math.max(1, Math.floor((await deadlockTimeoutMs(client)) / 2));
      for (let v = from; v < SCHEMA_VERSION; v++) await migrateOne(client, v, budgetMs, o);
    }
    return { from, to: SCHEMA_VERSION };
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]);
    await client.query('RESET lock_timeout');
  }
}

/** Migration `v` + 1 in one transaction, its tables taken first within `budgetMs`; tried again while one is held. */
async function migrateOne(client: Client, v: number, budgetMs: number, o: MigrateOptions): Promise<void> {
  const attempts = o.attempts ?? LOCK_ATTEMPTS;
  const tables = await tablesOf(client, MIGRATIONS[v]!);
  const began = performance.now();
  for (let attempt = 1; ; attempt++) {
    await client.query('BEGIN');
    let held: Held | null;
    try {
      held = await lockAll(client, tables, budgetMs);
      if (held === null) {
        await client.query(MIGRATIONS[v]!);
        await client.query('UPDATE oh_hai_schema SET version = $1', [v + 1]);
        await client.query('COMMIT');
        return;
      }
    } catch (e) {
      await client.query('ROLLBACK');
      throw e;
    }
    await client.query('ROLLBACK');
    const { table, by } = held;
    if (attempt >= attempts) {
      const seconds = ((performance.now() - began) / 1000).toFixed(1);
      const pids = by.map((h) => h.pid);
      throw new Error(
        `migration ${v + 1} could not take table ${table}: ${attempts} tries of ${budgetMs} ms each over ${seconds} s found it held${by.length > 0 ? ` by ${by.map(holderText).join('; ')}` : ''}. ` +
          `Another instance is still serving on this database (an instance of the previous version?), or a transaction was left open: stop every instance of the previous version before starting this one (docs/deploy.md, "Migrations")` +
          `${pids.length > 0 ? `, or end the transaction (SELECT pg_terminate_backend(${pids[0]}))` : ''}, then start this Hub again`,
      );
    }
    const waitMs = Math.round(Math.min(2000, 100 * 2 ** (attempt - 1)) * (0.5 + Math.random()));
    o.log?.(
      `hub: migration ${v + 1} found table ${table} held${by.length > 0 ? ` by ${holderText(by[0]!)}` : ''}; try ${attempt + 1} of ${attempts} in ${waitMs} ms`,
    );
    await sleep(waitMs);
  }
}

/**
 * The tables a migration's text names, or whose index it names (DROP INDEX locks the index's
 * table), that exist now; tables it creates are nobody else's yet. A name that is also a
 * column's at worst takes one table more.
 */
async function tablesOf(client: Client, text: string): Promise<string[]> {
  const words = [...new Set(text.toLowerCase().match(/[a-z_][a-z0-9_]*/g) ?? [])];
  const r = await client.query<{ name: string }>(
    `SELECT DISTINCT t.relname AS name
       FROM pg_class c LEFT JOIN pg_index i ON i.indexrelid = c.oid
       JOIN pg_class t ON t.oid = coalesce(i.indrelid, c.oid)
      WHERE c.relname = ANY($1) AND c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p', 'i')
      ORDER BY 1`,
    [words],
  );
  return r.rows.map((row) => row.name);
}

async function deadlockTimeoutMs(client: Client): Promise<number> {
  const r = await client.query<{ ms: string }>(`SELECT setting AS ms FROM pg_settings WHERE name = 'deadlock_timeout'`);
  return Number(r.rows[0]?.ms ?? 1000);
}

/** A table a try could not take in time, and who held it then. */
interface Held {
  table: string;
  by: Holder[];
}

/** Take every table ACCESS EXCLUSIVE within `budgetMs` in all: the table found held, or null once all are taken. */
async function lockAll(client: Client, tables: readonly string[], budgetMs: number): Promise<Held | null> {
  const deadline = performance.now() + budgetMs;
  for (const table of tables) {
    const left = Math.floor(deadline - performance.now());
    if (left < 1 || !(await taken(client, table, left))) return { table, by: await holders(client, table) };
  }
  // The migration's own statements wait for nothing once its tables are held: no bound (not even the serving one, the session's default).
  await client.query('SET LOCAL lock_timeout = 0');
  return null;
}

/**
 * Whether `table` was taken within `ms`. Under a savepoint, so the tables taken before stay held
 * while the holders are read: one that waits for them is still there to be named.
 */
async function taken(client: Client, table: string, ms: number): Promise<boolean> {
  try {
    // One round trip; both are literals (a whole number, a catalog's name quoted).
    await client.query(`SAVEPOINT taking; SET LOCAL lock_timeout = ${ms}; LOCK TABLE "${table.replaceAll('"', '""')}" IN ACCESS EXCLUSIVE MODE`);
    return true;
  } catch (e) {
    if ((e as { code?: unknown }).code !== LOCK_NOT_AVAILABLE) throw e;
    await client.query('ROLLBACK TO SAVEPOINT taking');
    return false;
  }
}

const LOCK_NOT_AVAILABLE = '55P03';

interface Holder {
  pid: number;
  app: string;
  addr: string | null;
  state: string | null;
  seconds: number | null;
}

/** Who holds a lock on `table` now, the oldest transactions first: whom the refusal names. */
async function holders(client: Client, table: string): Promise<Holder[]> {
  const r = await client.query<Holder>(
    `SELECT DISTINCT ON (a.xact_start, a.pid) a.pid, a.application_name AS app, host(a.client_addr) AS addr, a.state,
            round(extract(epoch FROM clock_timestamp() - a.xact_start)::numeric, 1)::float8 AS seconds
       FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
      WHERE l.locktype = 'relation' AND l.granted AND l.pid <> pg_backend_pid()
        AND l.relation = (SELECT oid FROM pg_class WHERE relname = $1 AND relnamespace = current_schema()::regnamespace)
      ORDER BY a.xact_start NULLS LAST, a.pid LIMIT 3`,
    [table],
  );
  return r.rows;
}

const holderText = (h: Holder): string =>
  `pid ${h.pid} (${h.app || 'no application name'}${h.addr === null ? '' : ` from ${h.addr}`}, ${h.state ?? 'state unknown'}${h.seconds === null ? '' : `, its transaction open ${h.seconds} s`})`;

const UNDEFINED_TABLE = '42P01';

/** The version the database is at (for /readyz); null before the first migration. Any other failure (a lock timed out, no answer) is thrown. */
export async function schemaVersion(client: { query: PoolClient['query'] }): Promise<number | null> {
  const r = await client.query<{ version: number }>(`SELECT version FROM oh_hai_schema`).catch((e: unknown) => {
    if ((e as { code?: unknown }).code === UNDEFINED_TABLE) return null;
    throw e;
  });
  return r?.rows[0]?.version ?? null;
}

/**
 * Why another backend is migrating this database now, or null: it holds the migration lock and a
 * table ACCESS EXCLUSIVE (a start that finds nothing to migrate holds the lock for milliseconds and
 * no table). Reads only pg_locks and pg_stat_activity, so it waits for no table.
 */
export async function migrationHolder(client: { query: PoolClient['query'] }): Promise<string | null> {
  const r = await client.query<Holder>(
    `SELECT a.pid, s.application_name AS app, host(s.client_addr) AS addr, s.state,
            round(extract(epoch FROM clock_timestamp() - s.xact_start)::numeric, 1)::float8 AS seconds
       FROM pg_locks a JOIN pg_stat_activity s ON s.pid = a.pid
      WHERE a.locktype = 'advisory' AND a.granted AND a.classid = 0 AND a.objid = $1 AND a.objsubid = 1
        AND a.database = (SELECT oid FROM pg_database WHERE datname = current_database()) AND a.pid <> pg_backend_pid()
        AND EXISTS (SELECT 1 FROM pg_locks t WHERE t.pid = a.pid AND t.locktype = 'relation' AND t.mode = 'AccessExclusiveLock' AND t.granted)
      LIMIT 1`,
    [MIGRATION_LOCK],
  );
  const h = r.rows[0];
  return h === undefined ? null : `a migration holds the database's tables: ${holderText(h)}`;
}
