import { chmodSync, closeSync, openSync } from 'node:fs';
import path from 'node:path';
import { ensureDir } from '../../util/fs-durable.js';
import type { Clock } from '../../util/clock.js';
import { GroupCommit } from './commit.js';
import type { EntryRow } from './entries.js';
import { RecentEntries } from './sqlite-pages.js';
import { STORE_FILE } from './files.js';
import { openSqlite, sqliteErrorCode, type SqliteDatabase, type SqliteDriverChoice, type SqliteStatement } from './sqlite-driver.js';
import { bindNow, insertStatement, type Insert, type Param, type Sql, type Store, type Tx, type WakeTopic } from './sql.js';

export type Db = SqliteDatabase;

const SCHEMA_VERSION = 1;

/** The error code `openStore` throws with when another process holds the store. */
export const STORE_IN_USE = 'HUB_DATA_DIR_IN_USE';

/**
 * The durable store. Instants are integer milliseconds on the Hub's clock, so leases
 * and message TTLs are measured across restarts from stored instants, never from timers.
 */
const SCHEMA = `
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);

CREATE TABLE IF NOT EXISTS agents (
  id TEXT PRIMARY KEY,
  label TEXT NOT NULL,
  token_hash TEXT NOT NULL UNIQUE,
  revoked INTEGER NOT NULL DEFAULT 0,
  created_at INTEGER NOT NULL
);

CREATE TABLE IF NOT EXISTS principal_presence (
  agent_id TEXT PRIMARY KEY,
  seen_at INTEGER NOT NULL
);

CREATE TABLE IF NOT EXISTS sessions (
  id TEXT PRIMARY KEY,
  agent_id TEXT NOT NULL,
  name TEXT,
  client_key TEXT NOT NULL,
  home TEXT,
  state TEXT NOT NULL,
  lease_seconds REAL NOT NULL,
  expires_at INTEGER NOT NULL,
  last_renewed_at INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  closed_at INTEGER,
  seen_at INTEGER,
  holder_home TEXT,
  holder_host TEXT,
  holder_pid INTEGER,
  holder_since INTEGER,
  holder_seen_at INTEGER
);
CREATE INDEX IF NOT EXISTS sessions_by_agent ON sessions (agent_id, state);
-- No index holds a column a lease renewal writes (PostgreSQL's migration 6: renewals update in place).
DROP INDEX IF EXISTS sessions_by_expiry;
CREATE INDEX IF NOT EXISTS sessions_by_state ON sessions (state);

CREATE TABLE IF NOT EXISTS operator_stops (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  agent_id TEXT NOT NULL,
  client_key TEXT,
  name TEXT,
  session_id TEXT,
  created_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS operator_stops_by_agent ON operator_stops (agent_id);

CREATE TABLE IF NOT EXISTS messages (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
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
  created_at INTEGER NOT NULL,
  state TEXT NOT NULL,
  prior TEXT,
  track TEXT NOT NULL,
  destination TEXT NOT NULL,
  response_id TEXT,
  response_text TEXT,
  response_at INTEGER,
  idempotency_key TEXT,
  request_hash TEXT,
  UNIQUE (from_agent, idempotency_key)
);
CREATE INDEX IF NOT EXISTS messages_by_sender ON messages (from_agent, seq);
CREATE INDEX IF NOT EXISTS messages_by_recipient ON messages (to_agent, seq);
CREATE INDEX IF NOT EXISTS messages_open ON messages (state, created_at);

CREATE TABLE IF NOT EXISTS entries (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  id TEXT NOT NULL UNIQUE,
  kind TEXT NOT NULL,
  body TEXT NOT NULL,
  to_agent TEXT NOT NULL,
  to_session TEXT,
  claimed_session TEXT,
  message_id TEXT,
  created_at INTEGER NOT NULL,
  delivered INTEGER NOT NULL DEFAULT 0,
  state TEXT NOT NULL,
  canonical INTEGER
);
-- Mailbox reads are keyset pages (entries.ts pendingSeqs): each index ends in seq, so a page is
-- one range scan in seq order that reads no row it skips. A session's own mail and unclaimed
-- principal mail have partial indexes holding only what their query can want (one index write
-- fewer per insert), and so has principal mail a session claimed (entries_claims: no NULL key for
-- every entry of session mail). Replaces the (…, state) indexes and the whole-table entries_own,
-- entries_free and entries_claimed of earlier builds.
DROP INDEX IF EXISTS entries_by_session;
DROP INDEX IF EXISTS entries_by_mailbox;
DROP INDEX IF EXISTS entries_by_claim;
DROP INDEX IF EXISTS entries_own;
DROP INDEX IF EXISTS entries_free;
DROP INDEX IF EXISTS entries_claimed;
CREATE INDEX IF NOT EXISTS entries_to_session ON entries (to_session, state, seq) WHERE to_session IS NOT NULL;
CREATE INDEX IF NOT EXISTS entries_unclaimed ON entries (to_agent, to_session, state, claimed_session, seq) WHERE to_session IS NULL AND claimed_session IS NULL;
CREATE INDEX IF NOT EXISTS entries_claims ON entries (claimed_session, state, seq) WHERE claimed_session IS NOT NULL;
CREATE INDEX IF NOT EXISTS entries_open ON entries (state, created_at);

-- Signed-in web inbox sessions (web/sessions.ts): the cookie id's hash, and the session's secrets
-- sealed under a key derived from the signing key; kept in the store so every instance sees them.
CREATE TABLE IF NOT EXISTS web_sessions (
  id_hash TEXT PRIMARY KEY,
  sealed TEXT NOT NULL,
  last_seen_at INTEGER NOT NULL,
  created_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS web_sessions_by_seen ON web_sessions (last_seen_at);
`;

/** Open (creating if needed) the store in `dataDir`: directory 0700, database file 0600. */
export function openStore(dataDir: string, driver: SqliteDriverChoice = 'auto'): Db {
  ensureDir(dataDir, 0o700);
  const file = path.join(dataDir, STORE_FILE);
  // SQLite gives its -wal file the database file's mode, so creating it 0600 covers both.
  closeSync(openSync(file, 'a', 0o600));
  chmodSync(file, 0o600);
  const db = openSqlite(file, driver);
  try {
    db.pragma('busy_timeout = 1000');
    // One Hub per data dir: the exclusive lock is held until this process closes the store
    // or dies (the kernel drops it, so a restart after kill -9 opens at once).
    db.pragma('locking_mode = EXCLUSIVE');
    // WAL + FULL: every committed answer survives a kill -9 or power loss.
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = FULL');
    db.exec('BEGIN EXCLUSIVE; COMMIT');
    db.exec(SCHEMA);
    addCanonicalMark(db);
    const version = getMeta(db, 'schema_version');
    if (version === null) setMeta(db, 'schema_version', String(SCHEMA_VERSION));
    else if (Number(version) !== SCHEMA_VERSION) {
      throw new Error(`the store in ${dataDir} has schema version ${version}; this Hub reads version ${SCHEMA_VERSION}`);
    }
  } catch (e) {
    db.close();
    if (sqliteErrorCode(e) === 'SQLITE_BUSY') {
      throw Object.assign(new Error(`another Hub is using the data dir ${dataDir} (its store is locked); stop it first, or pass another --data`), {
        code: STORE_IN_USE,
      });
    }
    throw e;
  }
  return db;
}

/**
 * `entries.canonical` is 1 where `body` is the entry's canonical JSON (MA2H §12), so a delivery
 * is signed over the stored text as it is. Rows written by earlier builds have NULL there (their
 * bodies are JSON.stringify in the order the fields were built) and are re-serialised when signed.
 * A store made by an earlier build gains the column here; a nullable column added at the end is
 * still read and written as before by a Hub of an earlier build on the same file.
 */
function addCanonicalMark(db: Db): void {
  const columns = db.pragma('table_info(entries)') as { name: string }[];
  if (!columns.some((c) => c.name === 'canonical')) db.exec('ALTER TABLE entries ADD COLUMN canonical INTEGER');
}

function getMeta(db: Db, key: string): string | null {
  const row = db.prepare('SELECT value FROM meta WHERE key = ?').get(key) as { value: string } | undefined;
  return row?.value ?? null;
}

function setMeta(db: Db, key: string, value: string): void {
  db.prepare('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value').run(key, value);
}

/**
 * SQLite has no row locks: one writer at a time is the rule, so a trailing `FOR UPDATE`, `FOR NO KEY
 * UPDATE` or `FOR KEY SHARE` (of one table: `OF s`) or a sub-select's `FOR KEY SHARE` says nothing here.
 */
export const dropRowLock = (sql: string): string =>
  sql.replace(/\s+FOR (?:UPDATE|NO KEY UPDATE|KEY SHARE)(?: OF \w+)?\s*$/i, '').replace(/ FOR KEY SHARE\)/g, ')');

/**
 * What a statement may do to `entries`, decided once per text: nothing (it does not name the table,
 * or writes nothing); only take rows out of mailboxes' pending sets or mark them (an ack, an expiry,
 * a claim: the statements listed here); or anything (every other statement that names it).
 */
const REMOVES_ONLY = /^UPDATE entries SET (delivered = 1(, state = 'acknowledged')?|state = 'expired'|claimed_session = \?) WHERE /;
function entriesChange(sql: string): 'none' | 'removes' | 'any' {
  if (!/\b(INSERT|UPDATE|DELETE|REPLACE)\b/i.test(sql) || !/\bentries\b/i.test(sql)) return 'none';
  return REMOVES_ONLY.test(sql) ? 'removes' : 'any';
}

/**
 * Statements on one SQLite connection, each prepared once. `recent` hears every statement that
 * may change `entries` as it runs, but for the inserts `insert` makes, whose rows it is given.
 */
function sqliteStatements(db: Db, recent: RecentEntries): { sql: Sql; insert: (ins: Insert) => number } {
  const cache = new Map<string, { st: SqliteStatement; change: 'none' | 'removes' | 'any' }>();
  const prepared = (sql: string, heard = true): SqliteStatement => {
    let p = cache.get(sql);
    if (!p) {
      const text = dropRowLock(sql);
      cache.set(sql, (p = { st: db.prepare(text), change: entriesChange(text) }));
    }
    if (heard && p.change !== 'none') recent.changed(p.change === 'removes');
    return p.st;
  };
  return {
    sql: {
      get: async <T>(sql: string, ...params: Param[]) => (prepared(sql).get(...params) as T | undefined) ?? null,
      all: async <T>(sql: string, ...params: Param[]) => prepared(sql).all(...params) as T[],
      run: async (sql: string, ...params: Param[]) => prepared(sql).run(...params).changes,
    },
    insert: (ins) => {
      const st = insertStatement(ins);
      const { seq } = prepared(`${st.sql} RETURNING seq`, false).get(...st.params) as { seq: number };
      if (ins.table === 'entries') recent.inserted({ seq, ...ins.row } as unknown as EntryRow);
      return seq;
    },
  };
}

export interface SqliteStoreHooks {
  /** The Hub's clock: every stored instant is on it. */
  clock: Clock;
  /** Wake this process's waiters (the one Hub on this store). */
  wake: (topic: WakeTopic, key: string) => void;
  /** After every committed batch (the Hub delivers its wake-ups here). */
  committed: () => void;
  effectFailed: (error: unknown) => void;
}

/**
 * The embedded store: one Hub process on one SQLite file. Units run through group commit
 * (one fsync per batch); reads outside a unit wait for a batch being written, so they never
 * see one half-done.
 */
export function sqliteStore(db: Db, hooks: SqliteStoreHooks): Store {
  const recent = new RecentEntries();
  const commits = new GroupCommit(db, { committed: hooks.committed, effectFailed: hooks.effectFailed, batches: recent });
  const { sql, insert } = sqliteStatements(db, recent);
  // A read waits only while a batch's transaction is open (not for a microtask when none is).
  const read: Sql = {
    get: async (q, ...p) => (commits.busy && (await commits.idle()), sql.get(q, ...p)),
    all: async (q, ...p) => (commits.busy && (await commits.idle()), sql.all(q, ...p)),
    run: async (q, ...p) => (commits.busy && (await commits.idle()), sql.run(q, ...p)),
  };
  recent.serves(read);
  const once = <T>(
    take: () => { sql: string; params: readonly Param[] },
    committed?: (rows: T[]) => void,
    wakes?: ReadonlyArray<readonly [WakeTopic, string]>,
  ): Promise<T[]> =>
    commits.run(async () => {
      const { sql: text, params } = take();
      const bound = bindNow(text, params, hooks.clock.now());
      const rows = await sql.all<T>(bound.sql, ...bound.params);
      if (committed) commits.afterCommit(() => committed(rows));
      if (wakes !== undefined && rows.length > 0) for (const [topic, key] of wakes) commits.afterCommit(() => hooks.wake(topic, key));
      return rows;
    });
  return {
    kind: 'sqlite',
    shared: false,
    as() {
      return this;
    },
    read,
    // No pool: nothing to wait for.
    reading: (fn) => fn(read),
    write: <T>(unit: (tx: Tx) => Promise<T>): Promise<T> =>
      commits.run(() => {
        const tx: Tx = {
          ...sql,
          now: hooks.clock.now(),
          afterCommit: (effect) => commits.afterCommit(effect),
          wake: (topic, key) => commits.afterCommit(() => hooks.wake(topic, key)),
          lockAgent: async () => {},
          insertLocked: async (_agentId: string, first: Insert, ...rest: Insert[]) => {
            const seq = insert(first);
            for (const ins of rest) insert(ins);
            return seq;
          },
        };
        return unit(tx);
      }),
    once: <T>(text: string, params: readonly Param[], committed?: (rows: T[]) => void, wakes?: ReadonlyArray<readonly [WakeTopic, string]>): Promise<T[]> =>
      once(() => ({ sql: text, params }), committed, wakes),
    // In process and group-committed already: the statement is made as its batch runs.
    onceTaken: (take, committed) => once(take, committed),
    health: async () => {
      try {
        db.prepare('SELECT 1').get();
        return { ok: true, reason: null };
      } catch (e) {
        return { ok: false, reason: `the SQLite store does not answer: ${e instanceof Error ? e.message : String(e)}` };
      }
    },
    close: async () => {
      await commits.drain();
      db.close();
    },
  };
}
