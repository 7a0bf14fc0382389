import { createRequire } from 'node:module';
import type BetterSqlite3 from 'better-sqlite3';

/**
 * The one synchronous SQLite driver the Hub opens its database through. Two engines sit
 * under it: Node's built-in `node:sqlite` where the running Node has it unflagged with the
 * transaction state this driver reads (22.16+, 24), else the optional `better-sqlite3`
 * package (loaded only on that path, so an agent's host needs neither a compiler nor a
 * native module). Both speak the same SQLite: the interface below is exactly what the Hub
 * uses, and transactions are implemented once on top of `exec` and `inTransaction`, so both
 * engines run the same BEGIN / SAVEPOINT sequence (docs/internals.md "SQLite driver").
 */

export const SQLITE_DRIVERS = ['node', 'better-sqlite3'] as const;
export type SqliteDriverName = (typeof SQLITE_DRIVERS)[number];
/** `auto` = node:sqlite where this Node has it, else better-sqlite3. */
export type SqliteDriverChoice = 'auto' | SqliteDriverName;

/** Forces the engine (tests run the Hub on each); unset or `auto` lets the Hub pick. */
export const SQLITE_DRIVER_ENV = 'OH_HAI_HUB_SQLITE_DRIVER';

/** The error code `openSqlite` throws with when no engine can be loaded on this Node. */
export const SQLITE_UNAVAILABLE = 'HUB_SQLITE_UNAVAILABLE';

/** What a statement binds. `undefined` binds as NULL on both engines (better-sqlite3 does so natively). */
export type SqlParam = string | number | bigint | Uint8Array | null | undefined;

export interface RunResult {
  changes: number;
  lastInsertRowid: number | bigint;
}

/** Rows come back as plain objects keyed by column name (integers as numbers). */
export interface SqliteStatement {
  run(...params: SqlParam[]): RunResult;
  /** The first row, or undefined when there is none. */
  get(...params: SqlParam[]): unknown;
  all(...params: SqlParam[]): unknown[];
  iterate(...params: SqlParam[]): IterableIterator<unknown>;
}

export interface SqliteDatabase {
  readonly driver: SqliteDriverName;
  prepare(sql: string): SqliteStatement;
  /** Runs one or more statements that return nothing. */
  exec(sql: string): void;
  /** `PRAGMA <statement>`, e.g. `journal_mode = WAL`; its rows (empty for a pragma that answers nothing). */
  pragma(statement: string): unknown[];
  /**
   * Wraps `fn` so that each call runs it in a transaction: BEGIN … COMMIT at the outside,
   * a SAVEPOINT when already inside one. A throw rolls back exactly `fn`'s writes (unless
   * SQLite already rolled back the whole transaction, as it does on SQLITE_FULL) and is
   * rethrown as it was. `fn` must be synchronous.
   */
  transaction<T>(fn: () => T): () => T;
  /** True while a transaction is open, as SQLite sees it (false after SQLite rolled one back itself). */
  readonly inTransaction: boolean;
  close(): void;
}

/** Parse the value of {@link SQLITE_DRIVER_ENV}: the choice, or the sentence that says what was wrong. */
export function parseSqliteDriverChoice(value: string | undefined): { ok: true; value: SqliteDriverChoice } | { ok: false; reason: string } {
  const v = value?.trim() ?? '';
  if (v === '' || v === 'auto') return { ok: true, value: 'auto' };
  if ((SQLITE_DRIVERS as readonly string[]).includes(v)) return { ok: true, value: v as SqliteDriverName };
  return { ok: false, reason: `${SQLITE_DRIVER_ENV} must be auto, node or better-sqlite3, got ${JSON.stringify(value)}; unset it to let the Hub pick` };
}

// SQLite's primary result codes by number (sqlite3.h); an extended code's low byte is its primary.
const PRIMARY_CODES = [
  'SQLITE_OK',
  'SQLITE_ERROR',
  'SQLITE_INTERNAL',
  'SQLITE_PERM',
  'SQLITE_ABORT',
  'SQLITE_BUSY',
  'SQLITE_LOCKED',
  'SQLITE_NOMEM',
  'SQLITE_READONLY',
  'SQLITE_INTERRUPT',
  'SQLITE_IOERR',
  'SQLITE_CORRUPT',
  'SQLITE_NOTFOUND',
  'SQLITE_FULL',
  'SQLITE_CANTOPEN',
  'SQLITE_PROTOCOL',
  'SQLITE_EMPTY',
  'SQLITE_SCHEMA',
  'SQLITE_TOOBIG',
  'SQLITE_CONSTRAINT',
  'SQLITE_MISMATCH',
  'SQLITE_MISUSE',
  'SQLITE_NOLFS',
  'SQLITE_AUTH',
  'SQLITE_FORMAT',
  'SQLITE_RANGE',
  'SQLITE_NOTADB',
  'SQLITE_NOTICE',
  'SQLITE_WARNING',
] as const;

/**
 * The primary result code (`SQLITE_BUSY`, `SQLITE_CONSTRAINT`, …) of an error either engine
 * threw, else null. better-sqlite3 names the extended code (`SQLITE_CONSTRAINT_UNIQUE`);
 * node:sqlite throws `ERR_SQLITE_ERROR` with the extended code as a number in `errcode`.
 */
export function sqliteErrorCode(e: unknown): string | null {
  if (typeof e !== 'object' || e === null) return null;
  const { code, errcode } = e as { code?: unknown; errcode?: unknown };
  if (code === 'ERR_SQLITE_ERROR' && typeof errcode === 'number') return PRIMARY_CODES[errcode & 0xff] ?? null;
  if (typeof code !== 'string' || !code.startsWith('SQLITE_')) return null;
  return PRIMARY_CODES.find((p) => code === p || code.startsWith(`${p}_`)) ?? null;
}

const SAVEPOINT = 'oh_hai_unit';

/** The transaction sequence both engines share; see {@link SqliteDatabase.transaction}. */
abstract class Engine implements SqliteDatabase {
  abstract readonly driver: SqliteDriverName;
  abstract readonly inTransaction: boolean;
  abstract prepare(sql: string): SqliteStatement;
  abstract exec(sql: string): void;
  abstract pragma(statement: string): unknown[];
  abstract close(): void;

  transaction<T>(fn: () => T): () => T {
    return () => {
      const nested = this.inTransaction;
      this.exec(nested ? `SAVEPOINT ${SAVEPOINT}` : 'BEGIN');
      try {
        const result = fn();
        this.exec(nested ? `RELEASE ${SAVEPOINT}` : 'COMMIT');
        return result;
      } catch (error) {
        // A failed COMMIT (a deferred constraint) leaves the transaction open: roll it back.
        if (this.inTransaction) this.exec(nested ? `ROLLBACK TO ${SAVEPOINT}; RELEASE ${SAVEPOINT}` : 'ROLLBACK');
        throw error;
      }
    };
  }
}

// ---- node:sqlite ------------------------------------------------------------------------

/** The part of node:sqlite this driver uses (@types/node 20 has no typings for it). */
interface NodeStatementSync {
  run(...params: SqlParam[]): RunResult;
  get(...params: SqlParam[]): unknown;
  all(...params: SqlParam[]): unknown[];
  iterate(...params: SqlParam[]): IterableIterator<unknown>;
}
interface NodeDatabaseSync {
  prepare(sql: string): NodeStatementSync;
  exec(sql: string): void;
  readonly isTransaction: boolean;
  readonly isOpen: boolean;
  close(): void;
}
type NodeDatabaseSyncClass = new (file: string) => NodeDatabaseSync;

/** node:sqlite refuses `undefined`; better-sqlite3 binds it as NULL, and the Hub was written against that. */
const bindable = (params: SqlParam[]): SqlParam[] => (params.includes(undefined) ? params.map((p) => p ?? null) : params);

class NodeStatement implements SqliteStatement {
  constructor(private readonly stmt: NodeStatementSync) {}
  run(...params: SqlParam[]): RunResult {
    return this.stmt.run(...bindable(params));
  }
  get(...params: SqlParam[]): unknown {
    return this.stmt.get(...bindable(params));
  }
  all(...params: SqlParam[]): unknown[] {
    return this.stmt.all(...bindable(params));
  }
  iterate(...params: SqlParam[]): IterableIterator<unknown> {
    return this.stmt.iterate(...bindable(params));
  }
}

class NodeEngine extends Engine {
  readonly driver = 'node';
  constructor(private readonly db: NodeDatabaseSync) {
    super();
  }
  get inTransaction(): boolean {
    // isTransaction throws on a closed database; better-sqlite3 answers false, and a batch
    // that failed because the store closed under it must be able to ask.
    return this.db.isOpen && this.db.isTransaction;
  }
  prepare(sql: string): SqliteStatement {
    return new NodeStatement(this.db.prepare(sql));
  }
  exec(sql: string): void {
    this.db.exec(sql);
  }
  pragma(statement: string): unknown[] {
    return this.db.prepare(`PRAGMA ${statement}`).all();
  }
  close(): void {
    this.db.close();
  }
}

// ---- better-sqlite3 ---------------------------------------------------------------------

/**
 * A statement that returns no rows (an UPDATE without RETURNING). better-sqlite3 refuses get(),
 * all() and iterate() on one; node:sqlite runs it and answers nothing, and so does this, so a
 * caller that reads whatever a statement returns (the store's one-statement unit) runs on both.
 */
class Unread implements SqliteStatement {
  constructor(private readonly stmt: BetterSqlite3.Statement<SqlParam[]>) {}
  run(...params: SqlParam[]): RunResult {
    return this.stmt.run(...params);
  }
  get(...params: SqlParam[]): unknown {
    this.stmt.run(...params);
    return undefined;
  }
  all(...params: SqlParam[]): unknown[] {
    this.stmt.run(...params);
    return [];
  }
  iterate(...params: SqlParam[]): IterableIterator<unknown> {
    this.stmt.run(...params);
    return [][Symbol.iterator]();
  }
}

class BetterEngine extends Engine {
  readonly driver = 'better-sqlite3';
  constructor(private readonly db: BetterSqlite3.Database) {
    super();
  }
  get inTransaction(): boolean {
    return this.db.inTransaction;
  }
  prepare(sql: string): SqliteStatement {
    const stmt = this.db.prepare<SqlParam[]>(sql);
    return stmt.reader ? stmt : new Unread(stmt);
  }
  exec(sql: string): void {
    this.db.exec(sql);
  }
  pragma(statement: string): unknown[] {
    // Its own pragma(): a statement that answers nothing cannot be read with all() here.
    return this.db.pragma(statement) as unknown[];
  }
  close(): void {
    this.db.close();
  }
}

// ---- loading ----------------------------------------------------------------------------

type Loaded<T> = { ok: true; value: T } | { ok: false; reason: string };

const requireHere = createRequire(import.meta.url);
const reasonOf = (e: unknown): string => (e instanceof Error ? e.message.replace(/\s+/g, ' ').trim() : String(e));
const loaded = new Map<SqliteDriverName, Loaded<NodeDatabaseSyncClass> | Loaded<typeof BetterSqlite3>>();

function loadNodeSqlite(): Loaded<NodeDatabaseSyncClass> {
  // Node 22 flags node:sqlite experimental on every load: a warning on stderr for each Hub
  // start that says nothing the user can act on. Only that one warning is dropped.
  const emitWarning = process.emitWarning;
  process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
    if (String(typeof warning === 'string' ? warning : warning.message).startsWith('SQLite is an experimental feature')) return;
    return (emitWarning as (...a: unknown[]) => void).call(process, warning, ...rest);
  }) as typeof process.emitWarning;
  let mod: { DatabaseSync: unknown };
  try {
    mod = requireHere('node:sqlite') as { DatabaseSync: unknown };
  } catch (e) {
    return { ok: false, reason: `this Node has no built-in node:sqlite (${reasonOf(e)})` };
  } finally {
    process.emitWarning = emitWarning;
  }
  const cls = mod.DatabaseSync as NodeDatabaseSyncClass;
  // isTransaction (22.16, 24.0) is how a rollback SQLite did itself is told from a live
  // transaction. It is an accessor of each instance, so an instance is asked.
  const probe = new cls(':memory:');
  const hasState = typeof probe.isTransaction === 'boolean';
  probe.close();
  if (!hasState) return { ok: false, reason: `this Node's node:sqlite is older than 22.16 (it has no DatabaseSync.isTransaction)` };
  return { ok: true, value: cls };
}

function loadBetterSqlite(): Loaded<typeof BetterSqlite3> {
  try {
    const cls = requireHere('better-sqlite3') as typeof BetterSqlite3;
    // The native binary loads on the first open: a binary built for another Node fails here, not later.
    new cls(':memory:').close();
    return { ok: true, value: cls };
  } catch (e) {
    const code = (e as { code?: unknown }).code;
    if (code === 'MODULE_NOT_FOUND') return { ok: false, reason: 'the optional package better-sqlite3 is not installed' };
    return { ok: false, reason: `the optional package better-sqlite3 does not load on this Node (${reasonOf(e)})` };
  }
}

function load(driver: 'node'): Loaded<NodeDatabaseSyncClass>;
function load(driver: 'better-sqlite3'): Loaded<typeof BetterSqlite3>;
function load(driver: SqliteDriverName): Loaded<NodeDatabaseSyncClass> | Loaded<typeof BetterSqlite3> {
  let l = loaded.get(driver);
  if (l === undefined) {
    l = driver === 'node' ? loadNodeSqlite() : loadBetterSqlite();
    loaded.set(driver, l);
  }
  return l;
}

/** Whether `driver` loads on this Node, and if not, why (tests skip a driver with this reason). */
export function sqliteDriverAvailable(driver: SqliteDriverName): { ok: true } | { ok: false; reason: string } {
  const l = driver === 'node' ? load('node') : load('better-sqlite3');
  return l.ok ? { ok: true } : { ok: false, reason: l.reason };
}

const unavailable = (message: string): Error => Object.assign(new Error(message), { code: SQLITE_UNAVAILABLE });

const FIX =
  'Run oh-hai on Node 24 (or 22.16+), whose built-in node:sqlite needs nothing else; or, to stay on this Node, ' +
  'reinstall oh-hai where its optional better-sqlite3 can be installed (a prebuilt binary for this platform, or a C++ toolchain: ' +
  'Debian `apt-get install build-essential python3`). Only the Hub (oh-hai hub serve, oh-hai demo) needs SQLite.';

/**
 * Open (creating if needed) the SQLite database `file` with the chosen engine. Throws an
 * error with code {@link SQLITE_UNAVAILABLE} and the exact fix when the engine cannot load.
 */
export function openSqlite(file: string, choice: SqliteDriverChoice = 'auto'): SqliteDatabase {
  const node = choice === 'better-sqlite3' ? null : load('node');
  if (node?.ok) return new NodeEngine(new node.value(file));
  if (node !== null && choice === 'node') {
    throw unavailable(`${SQLITE_DRIVER_ENV}=node, but ${node.reason} (Node ${process.version}): unset it to let the Hub pick, or run on Node 24 or 22.16+`);
  }
  const better = load('better-sqlite3');
  if (better.ok) return new BetterEngine(new better.value(file));
  if (node === null) throw unavailable(`${SQLITE_DRIVER_ENV}=better-sqlite3, but ${better.reason} (Node ${process.version}): unset it to let the Hub pick`);
  throw unavailable(`the Hub needs SQLite, and Node ${process.version} has none: ${node.reason}, and ${better.reason}. ${FIX}`);
}
