/**
 * The Hub's store seam. Every route, lease, delivery track, holder rule and receipt is
 * written once, as async units over this interface, and runs on either store:
 * SQLite (one process, the default) or PostgreSQL (any number of instances).
 *
 * SQL is written once in the subset both dialects share: `?` placeholders (PostgreSQL's
 * store numbers them), `CAST(x AS INTEGER)` for counts, no boolean parameters. A trailing
 * `FOR UPDATE` (or a sub-select's `FOR KEY SHARE`) takes a row lock on PostgreSQL; SQLite, which runs one writer at a time,
 * drops it.
 *
 * A parameter SQLite's planner would read is written `CAST(? AS TEXT)` / `CAST(? AS INTEGER)`: a
 * LIMIT, an equality that an ORDER BY follows on the same index, a lookup through a LEFT JOIN.
 * SQLite compiles a statement whose plan used a bound value again EVERY time that value is bound
 * (~50 K instructions a run, more than running it); a cast hides the value from the planner and
 * changes nothing on either store. test/integration/hub/statement-cost.test.ts finds the ones missed.
 */
import type { Work } from './work.js';

export type Param = string | number | null;

/** Statements, answered with plain rows (integers as numbers on both stores). */
export interface Sql {
  /** The first row, or null. */
  get<T>(sql: string, ...params: Param[]): Promise<T | null>;
  all<T>(sql: string, ...params: Param[]): Promise<T[]>;
  /** How many rows the statement changed. */
  run(sql: string, ...params: Param[]): Promise<number>;
}

/**
 * What wakes a Hub: new mail for an agent, mail back behind readers' cursors (released), a
 * message's track, a session that ended or changed holder, a credential or the messaging switch
 * that changed (every instance forgets the credentials it remembered: credentials.ts).
 */
export type WakeTopic = 'mail' | 'released' | 'message' | 'session' | 'credentials';

/**
 * Who committed a wake-up: this process (`local`), another instance (`remote`), or another
 * instance of an earlier build that named only the agent of new mail (`agent`: every mailbox
 * of it is woken).
 */
export type WakeFrom = 'local' | 'remote' | 'agent';

/** One unit of work: all of it commits, or none of it. */
export interface Tx extends Sql {
  /**
   * The deployment's clock when this unit started, in ms: the database's on PostgreSQL
   * (so every instance decides leases and staleness on ONE clock), the Hub's on SQLite.
   */
  readonly now: number;
  /** Run `effect` only once this unit is durable; never if it fails. */
  afterCommit(effect: () => void): void;
  /** Wake whoever waits on `key` (in this process and, on PostgreSQL, every instance) once committed. */
  wake(topic: WakeTopic, key: string): void;
  /**
   * Serialise, across instances, the units that decide from an agent's set of sessions (a
   * name's owner, the live count) or insert into its mailboxes (so its entries commit in seq
   * order); held until the unit ends. On SQLite every unit is already serial.
   */
  lockAgent(agentId: string): Promise<void>;
  /**
   * Insert `first` and then `rest`, holding `agentId`'s lock (as {@link lockAgent}) from before
   * any of their seqs is drawn, and answer `first`'s seq (the rest of its row is what was
   * inserted: nothing more is sent back or parsed): a message and its entry commit in seq order
   * per recipient agent. On PostgreSQL ONE statement, a data-modifying CTE that takes the lock and
   * then forms the rows (one round trip for what were three); on SQLite, where units are serial,
   * the INSERTs in turn.
   */
  insertLocked(agentId: string, first: Insert, ...rest: Insert[]): Promise<number>;
}

/**
 * An agent's transaction lock on PostgreSQL (Tx.lockAgent, Tx.insertLocked, and the one-statement
 * send of messages.ts): its one parameter is the agent's id. Every path that inserts into an
 * agent's mailboxes takes this same lock, so their entries commit in seq order.
 */
export const AGENT_LOCK = 'pg_advisory_xact_lock(hashtext(CAST(? AS TEXT)))';

/** One row to insert: its table, and each column's value (every value a parameter). */
export interface Insert {
  table: 'messages' | 'entries';
  row: Readonly<Record<string, Param>>;
}

/** A SQL expression and its parameters. */
export interface Formed {
  sql: string;
  params: Param[];
}

/**
 * `INSERT INTO <table> (<columns>)` with its values as parameters: `VALUES (?, …)`, or with
 * `from` named, `SELECT ?, … FROM <from>` (the row is formed, and its seq drawn, only once `from`
 * has been read; PostgreSQL types the parameters by their target columns either way). `formed`
 * names columns whose value is an expression over `from` instead (a value the statement decides).
 */
export function insertStatement(ins: Insert, from?: string, formed: Readonly<Record<string, Formed>> = {}): { sql: string; params: Param[] } {
  const columns: string[] = [];
  const params: Param[] = [];
  const values = Object.entries(ins.row).map(([column, value]) => {
    columns.push(column);
    const f = formed[column];
    if (f === undefined) {
      params.push(value);
      return '?';
    }
    params.push(...f.params);
    return f.sql;
  });
  return {
    sql: `INSERT INTO ${ins.table} (${columns.join(', ')}) ${from === undefined ? `VALUES (${values.join(', ')})` : `SELECT ${values.join(', ')} FROM ${from}`}`,
    params,
  };
}

export interface StoreHealth {
  ok: boolean;
  /** Why not, for /readyz; never a credential. */
  reason: string | null;
}

export interface Store {
  readonly kind: 'sqlite' | 'postgres';
  /**
   * This store with its statements done as `work` (work.ts): on PostgreSQL its round trips counted
   * by its name and its pool connections drawn from its lane, where the store itself counts as
   * `other` and draws as a request. Whoever owns the work passes the view down. SQLite counts nothing
   * by work: the store itself.
   */
  as(work: Work): Store;
  /** True when other Hub instances may share this store (their streams are invisible to us). */
  readonly shared: boolean;
  /** Run `unit` in a transaction; settles after it commits (or with its throw). */
  write<T>(unit: (tx: Tx) => Promise<T>): Promise<T>;
  /**
   * A unit of ONE statement deciding on the deployment's clock: each `?now` in `sql` is that
   * clock's instant (ms, as `Tx.now`), each `?` the next of `params`; its rows once committed. On
   * PostgreSQL it runs on its own (autocommit) and reads the database's clock inside the statement:
   * one round trip where a unit takes three (BEGIN with the clock, the statement, COMMIT). A stream
   * connect renews its lease so, every hold bound, on every stream (docs/deploy.md "Round trips").
   * `committed` runs with its rows (none without RETURNING) as a unit's effects do: before any later unit's.
   *
   * `wakes` are the statement's wake-ups (as {@link Tx.wake}'s), sent only when it returns a row:
   * this process wakes them once the statement is committed, and the other instances are told
   * before the rows are handed back (PostgreSQL: the notifier's next batch).
   */
  once<T>(sql: string, params: readonly Param[], committed?: (rows: T[]) => void, wakes?: ReadonlyArray<readonly [WakeTopic, string]>): Promise<T[]>;
  /**
   * {@link once} of the statement `take` makes when the statement may run (PostgreSQL: once a pool
   * connection of this work's lane is free; a retry runs the same statement again): what `take`
   * holds is decided then, not before the wait, so the stream connects queued meanwhile go in one.
   */
  onceTaken<T>(take: () => { sql: string; params: readonly Param[] }, committed?: (rows: T[]) => void): Promise<T[]>;
  /** Statements outside a transaction, for reads that decide nothing another request could race. */
  readonly read: Sql;
  /**
   * `fn` run with statements as {@link read}'s, all on ONE admission to the database pool, taken
   * before `fn` is called (PostgreSQL: once a connection of this work's lane is free; `fn` runs
   * its statements one at a time). What `fn` reads is decided when the connection is had, not
   * before the wait: the page reader gathers every stream woken until then into one statement.
   */
  reading<T>(fn: (read: Sql) => Promise<T>): Promise<T>;
  /** Whether the store answers and is migrated. */
  health(): Promise<StoreHealth>;
  close(): Promise<void>;
}

/** `sql` of {@link Store.once} with each `?now` as a plain `?` bound to `now`, and the parameters in order. */
export function bindNow(sql: string, params: readonly Param[], now: number): { sql: string; params: Param[] } {
  const out: Param[] = [];
  let next = 0;
  const text = sql.replace(/\?(now\b)?/g, (_, isNow: string | undefined) => {
    out.push(isNow ? now : params[next++]!);
    return '?';
  });
  return { sql: text, params: out };
}
