import type { Pool, PoolClient } from 'pg';
import type { Clock } from '../../../util/clock.js';
import { AGENT_LOCK, insertStatement, type Insert, type Param, type Sql, type Store, type Tx, type WakeTopic } from '../sql.js';
import type { Lanes } from '../lanes.js';
import { noteWork, type Work } from '../work.js';
import { TRACE } from '../../../util/trace.js';
import { storeClosed } from '../database-errors.js';
import type { MigrationWatch } from './migrating.js';
import { schemaVersion, SCHEMA_VERSION } from './schema.js';

/**
 * Each statement text as a named prepared statement: `?` placeholders numbered `$1…$n`, and a
 * name per distinct text. node-postgres parses a named statement once per connection and then
 * only binds and executes it, so PostgreSQL plans it once per connection (a generic plan after
 * its first few runs) instead of on every call: planning the stream page read cost more than
 * running it. The texts are the Hub's own, so their number is bounded (an IN list of 1–100).
 */
function prepared(): (sql: string) => { name: string; text: string } {
  const cache = new Map<string, { name: string; text: string }>();
  return (sql) => {
    let out = cache.get(sql);
    if (out === undefined) {
      let n = 0;
      out = { name: `oh_hai_${cache.size}`, text: sql.replace(/\?/g, () => `$${++n}`) };
      cache.set(sql, out);
    }
    return out;
  };
}

/** Round trips to the database since start, by work (a route pattern, `push`, `sweep`, …): inside units (BEGIN and COMMIT included) and reads outside them. */
export type RoundTrips = Map<string, { unit: number; read: number }>;

/**
 * A prepared statement whose result columns changed under it (`SELECT *` after a newer
 * instance migrated the schema in a rolling upgrade) fails on its connection from then on. In a
 * unit the connection is dropped (a fresh one prepares it anew) and the unit runs again; a read
 * outside a unit (whose connection the pool drops on any error) runs once more unprepared.
 */
const STALE_PLAN = '0A000';

/** A statement gave up waiting for a lock (schema.ts SERVING_LOCK_TIMEOUT_MS): refused if a migration holds the tables, else run again. */
const LOCK_TIMED_OUT = '55P03';

/** A column's text as its value (BIGINT as a number: store.ts's callers count on it). */
export type TypeParsers = { getTypeParser(oid: number, format: 'text'): (text: string) => unknown };

/** What node-postgres hands a submitted query (a `Submittable`, as pg-cursor is): the connection's protocol writes and the statements it has parsed. */
interface Wire {
  stream: { cork?: () => void; uncork?: () => void };
  parsedStatements: Record<string, string>;
  submittedNamedStatements: Record<string, string>;
  parse(q: { text: string; name: string }): void;
  bind(b: { statement: string; values: readonly Param[]; valueMapper: (v: Param) => string | null }): void;
  describe(d: { type: 'P'; name: '' }): void;
  execute(e: { portal: '' }): void;
  sync(): void;
}
/** A statement's result columns on one connection: their names and parsers (none: it returns no rows). */
interface Shape {
  names: string[];
  parsers: Array<(text: string) => unknown>;
}
/** Per connection, each prepared statement's result columns, as its first run's Describe said: no later run asks again. */
const shapes = new WeakMap<Wire, Map<string, Shape>>();
const NO_ROWS: Shape = { names: [], parsers: [] };
/** A parameter as its text (what node-postgres's prepareValue makes of a string, a number or null). */
const paramText = (v: Param): string | null => (v === null || v === undefined ? null : typeof v === 'string' ? v : String(v));

/**
 * One run of a named prepared statement, submitted straight to the connection. node-postgres's
 * own Query sends Describe on every run (and PostgreSQL answers with the row description, which
 * it then parses and turns into parsers again), clones the query config, and builds a Result and
 * a promise on top of the callback. Here a connection describes a statement once, on its first
 * run; later runs are Bind, Execute, Sync, and their rows are built from the remembered columns.
 * A statement whose columns change under it fails with 0A000 and its connection is dropped
 * (below), so a remembered shape never outlives the plan it describes.
 */
class Run {
  rows: Record<string, unknown>[] = [];
  rowCount = 0;
  /** Read by node-postgres (a parse that completed, or failed, is recorded under it). */
  readonly name: string;
  readonly text: string;
  callback?: (error: Error | null, result?: Run) => void;
  private wire: Wire | undefined;
  private shape: Shape | undefined;
  private described = false;
  private failed: Error | undefined;

  constructor(
    st: { name: string; text: string },
    private readonly values: readonly Param[],
    private readonly types: TypeParsers,
  ) {
    this.name = st.name;
    this.text = st.text;
  }

  submit(wire: Wire): void {
    this.wire = wire;
    this.shape = shapes.get(wire)?.get(this.name);
    // One write for the whole exchange (node-postgres's Query corks the same way).
    wire.stream.cork?.();
    try {
      if (wire.parsedStatements[this.name] === undefined && wire.submittedNamedStatements[this.name] === undefined) {
        wire.parse({ text: this.text, name: this.name });
        wire.submittedNamedStatements[this.name] = this.text;
      }
      wire.bind({ statement: this.name, values: this.values, valueMapper: paramText });
      if (this.shape === undefined) {
        this.described = true;
        wire.describe({ type: 'P', name: '' });
      }
      wire.execute({ portal: '' });
      wire.sync();
    } finally {
      wire.stream.uncork?.();
    }
  }

  handleRowDescription(msg: { fields: Array<{ name: string; dataTypeID: number }> }): void {
    this.shape = { names: msg.fields.map((f) => f.name), parsers: msg.fields.map((f) => this.types.getTypeParser(f.dataTypeID, 'text')) };
    this.remember(this.shape);
  }

  handleDataRow(msg: { fields: Array<string | null> }): void {
    const shape = this.shape;
    if (this.failed !== undefined || shape === undefined) return;
    try {
      const row: Record<string, unknown> = {};
      for (let i = 0; i < shape.names.length; i++) {
        const raw = msg.fields[i];
        row[shape.names[i]!] = raw === null || raw === undefined ? null : shape.parsers[i]!(raw);
      }
      this.rows.push(row);
    } catch (e) {
      this.failed = e as Error;
    }
  }

  handleCommandComplete(msg: { text: string }): void {
    // `INSERT 0 3`, `UPDATE 2`, `SELECT 5`: the count is the last word.
    const n = Number(msg.text.slice(msg.text.lastIndexOf(' ') + 1));
    this.rowCount = Number.isInteger(n) ? n : 0;
    // Described, and no columns came: a statement without rows.
    if (this.described && this.shape === undefined) this.remember(NO_ROWS);
  }

  handleEmptyQuery(): void {}

  handleError(error: Error): void {
    this.answer(error);
  }

  handleReadyForQuery(): void {
    this.answer(this.failed ?? null);
  }

  /** Once: a connection that fails after an error answer (its socket closing) tells every query it had. */
  private answer(error: Error | null): void {
    const callback = this.callback;
    this.callback = undefined;
    if (error !== null) callback?.(error);
    else callback?.(null, this);
  }

  private remember(shape: Shape): void {
    if (this.wire === undefined) return;
    let known = shapes.get(this.wire);
    if (known === undefined) shapes.set(this.wire, (known = new Map()));
    known.set(this.name, shape);
  }
}

/** A pool or one of its connections, given a {@link Run} and the callback for its answer (pg-pool takes its connection back before calling it). */
type Submits = { query(run: Run, done: (error: Error | null, result?: Run) => void): unknown };

function statements(
  q: Pool | PoolClient,
  statement: (sql: string) => { name: string; text: string },
  types: TypeParsers,
  counted: () => void,
  read = false,
  timedOut?: MigrationWatch['timedOut'],
): Sql {
  const submits = q as unknown as Submits;
  const submit = (sql: string, values: Param[]) =>
    new Promise<Run>((resolve, reject) => submits.query(new Run(statement(sql), values, types), (e, r) => (e ? reject(e) : resolve(r!))));
  // `counted` also refuses a statement once the store is closed (it throws first).
  const query = async (sql: string, values: Param[]): Promise<{ rows: unknown[]; rowCount: number | null }> => {
    counted();
    try {
      return await submit(sql, values);
    } catch (e) {
      const code = (e as { code?: unknown }).code;
      // Still in the lane: the reads queued behind it are refused, not sent to wait out the same lock (as asMigrating below).
      if (read && code === LOCK_TIMED_OUT && timedOut !== undefined) throw (await timedOut()) ?? e;
      if (!read || code !== STALE_PLAN) throw e;
      counted();
      return q.query(statement(sql).text, values);
    }
  };
  return {
    get: async <T>(sql: string, ...params: Param[]) => ((await query(sql, params)).rows[0] as T | undefined) ?? null,
    all: async <T>(sql: string, ...params: Param[]) => (await query(sql, params)).rows as T[],
    run: async (sql: string, ...params: Param[]) => (await query(sql, params)).rowCount ?? 0,
  };
}

/** Each read outside a unit takes its pool connection through the lanes (src/hub/server/lanes.ts), as `onLane` does; `sql` is made at the first. */
const laned = (sql: () => Sql, onLane: <T>(fn: () => Promise<T>) => Promise<T>): Sql => ({
  get: <T>(text: string, ...params: Param[]) => onLane(() => sql().get<T>(text, ...params)),
  all: <T>(text: string, ...params: Param[]) => onLane(() => sql().all<T>(text, ...params)),
  run: (text: string, ...params: Param[]) => onLane(() => sql().run(text, ...params)),
});

/** What the store itself does its statements as (`Store.as` makes a view for any other work). */
const OTHER: Work = { name: 'other', lane: 'request' };

/**
 * Why a unit is run again from the start: a deadlock (two units locking the same rows in
 * opposite orders), a serialization failure, or a unique violation (two instances
 * inserting one idempotency key: the second run finds the first's row and replays it), or a
 * prepared statement gone stale under a migration (on a fresh connection), or a lock waited
 * for longer than the serving bound with no migration holding the tables (`asMigrating`).
 */
const RETRY_CODES = new Set(['40P01', '40001', '23505', STALE_PLAN, LOCK_TIMED_OUT]);
const MAX_ATTEMPTS = 5;

export interface PostgresStoreOptions {
  pool: Pool;
  /** The pool's type parsers (the same object as its `types`): rows are built here, not by node-postgres. */
  types: TypeParsers;
  /** Every connection of `pool` is taken through these (src/hub/server/lanes.ts). */
  lanes: Lanes;
  /** Our real clock; the deployment's clock is read from the database and followed here. */
  local: Clock;
  /** `--clock-offset-ms`, on top of the database's clock. */
  offsetMs: number;
  /** Wake this process's waiters after a commit. */
  wake: (topic: WakeTopic, key: string) => void;
  /**
   * Tell the other instances of a committed unit's wake-ups (notifier.ts): a unit's answer waits
   * for it, so an answer given means the hint went out.
   */
  notify: (wakes: ReadonlyArray<readonly [WakeTopic, string]>) => Promise<void>;
  committed: () => void;
  effectFailed: (error: unknown) => void;
  /** Seen every time a unit runs again (metrics). */
  retried?: (code: string) => void;
  /** Another instance's migration holding the tables: work refused at once rather than waiting on its locks (migrating.ts). */
  migrating?: MigrationWatch;
}

/**
 * The shared store: any number of Hub instances on one PostgreSQL database.
 *
 * Units run at READ COMMITTED with explicit row locks (`SELECT … FOR UPDATE` on the
 * session, message or entry a unit decides from; an advisory transaction lock per agent for
 * registrations); conditional UPDATEs make first-claim-wins. A deadlock or unique violation
 * runs the unit again. Every unit starts by reading the database's clock in the same round
 * trip as its BEGIN, and decides on that instant.
 */
export function postgresStore(o: PostgresStoreOptions): Store & { readonly clock: Clock; readonly pool: Pool; readonly roundTrips: RoundTrips } {
  const statement = prepared();
  // Set by close(): what still asks for the database after the shutdown's wait is refused with a code, not the pool's error.
  let closed = false;
  // Counted, not timed: the statement-count tests and /metrics read these.
  const roundTrips: RoundTrips = new Map();
  /** Work refused before it takes a connection or sends its first statement, while a migration holds the tables. */
  const refuse = () => {
    const refusal = o.migrating?.refusal();
    if (refusal) throw refusal;
  };
  /**
   * A statement's error, or the refusal when it gave up on a lock a migration holds. Asked before
   * the work lets go of its place in the lane, so the work queued behind it is refused, not sent
   * to wait out the same lock.
   */
  const asMigrating = async (e: unknown): Promise<unknown> =>
    (e as { code?: unknown }).code === LOCK_TIMED_OUT && o.migrating !== undefined ? ((await o.migrating.timedOut()) ?? e) : e;
  const counted = (work: Work, kind: 'unit' | 'read') => {
    if (kind === 'read') {
      if (closed) throw storeClosed();
      refuse();
    }
    let n = roundTrips.get(work.name);
    if (n === undefined) roundTrips.set(work.name, (n = { unit: 0, read: 0 }));
    n[kind] += 1;
  };
  /** `fn` holding a pool connection of `work`'s lane (the push trace notes when it had one). */
  const onLane = <T>(work: Work, fn: () => Promise<T>): Promise<T> =>
    o.lanes.run(
      work.lane,
      TRACE
        ? () => {
            noteWork(work, 'laned');
            return fn();
          }
        : fn,
    );
  // Our estimate of (database clock − our clock), refreshed by every unit's BEGIN.
  let skew = 0;
  const clock: Clock = { now: () => o.local.now() + skew + o.offsetMs, monotonic: () => o.local.monotonic() };

  /** Units (and lone statements) run again after a deadlock, a unique violation or a stale plan, at most MAX_ATTEMPTS times. */
  async function retried<T>(work: Work, run: () => Promise<T>): Promise<T> {
    for (let n = 1; ; n++) {
      if (closed) throw storeClosed();
      try {
        return await onLane(work, run);
      } catch (e) {
        const code = (e as { code?: unknown }).code;
        if (typeof code !== 'string' || !RETRY_CODES.has(code) || n >= MAX_ATTEMPTS) throw e;
        o.retried?.(code);
      }
    }
  }
  // A lone statement runs on a pooled connection outside any unit: the pool drops that connection
  // on any error, so a stale plan is prepared afresh on the next attempt's. Counted by `once`.
  const lone = statements(o.pool, statement, o.types, () => {});
  /** The deployment's clock inside a statement, read once per statement (a volatile CTE is evaluated once). */
  const onceClock = `WITH oh_hai_clock AS (SELECT CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT) + ${Math.round(o.offsetMs)} AS now) `;

  /**
   * A `once` statement with the clock read inside it: made once per text, as its prepared statement
   * is (the texts are the Hub's own, a handful; a stream connect sends one of them every hold). A
   * statement with CTEs of its own (a renewal that reads a page) has the clock as its first.
   */
  const onceTexts = new Map<string, string>();
  const withClock = (sql: string): string => {
    let text = onceTexts.get(sql);
    if (text === undefined) {
      const body = sql.replace(/\?now\b/g, '(SELECT now FROM oh_hai_clock)');
      text = body.startsWith('WITH ') ? `${onceClock.trimEnd()}, ${body.slice(5)}` : onceClock + body;
      onceTexts.set(sql, text);
    }
    return text;
  };

  /** A unit's value, and its wake-ups for the other instances (this one's are woken at its commit). */
  async function attempt<T>(work: Work, unit: (tx: Tx) => Promise<T>): Promise<[T, Array<[WakeTopic, string]>]> {
    // Queued in the lane before the migration was found: refused now, not after a lock wait.
    refuse();
    const client = await o.pool.connect();
    const inUnit = () => counted(work, 'unit');
    const effects: Array<() => void> = [];
    const wakes: Array<[WakeTopic, string]> = [];
    let broken: Error | undefined;
    try {
      const sent = o.local.now();
      inUnit();
      const began = (await client.query(`BEGIN; SELECT CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT) AS now`)) as unknown as Array<{
        rows: Array<{ now: number }>;
      }>;
      const dbNow = Number(began[1]!.rows[0]!.now);
      // Whole ms: instants are BIGINT columns.
      skew = Math.round(dbNow - (sent + o.local.now()) / 2);
      const sql = statements(client, statement, o.types, inUnit);
      const tx: Tx = {
        ...sql,
        now: dbNow + o.offsetMs,
        afterCommit: (effect) => effects.push(effect),
        wake: (topic, key) => wakes.push([topic, key]),
        lockAgent: async (agentId) => {
          await sql.run(`SELECT ${AGENT_LOCK}`, agentId);
        },
        insertLocked: async (agentId: string, ...inserts: [Insert, ...Insert[]]) => {
          // Every row is formed from the materialised lock's one row: no seq is drawn before the lock is held.
          const parts = inserts.map((ins) => insertStatement(ins, 'agent'));
          const row = await sql.get<{ seq: number }>(
            `WITH agent AS MATERIALIZED (SELECT ${AGENT_LOCK} AS locked), ${parts.map((p, i) => `i${i} AS (${p.sql}${i === 0 ? ' RETURNING seq' : ''})`).join(', ')} SELECT seq FROM i0`,
            agentId,
            ...parts.flatMap((p) => p.params),
          );
          return row!.seq;
        },
      };
      let value: T;
      try {
        value = await unit(tx);
      } catch (e) {
        inUnit();
        await client.query('ROLLBACK').catch((r: Error) => (broken = r));
        if ((e as { code?: unknown }).code === STALE_PLAN) broken = e as Error;
        throw await asMigrating(e);
      }
      try {
        inUnit();
        await client.query('COMMIT');
      } catch (e) {
        await client.query('ROLLBACK').catch((r: Error) => (broken = r));
        throw e;
      }
      for (const e of effects) run(e);
      for (const [topic, key] of wakes) run(() => o.wake(topic, key));
      run(o.committed);
      return [value, wakes];
    } finally {
      client.release(broken);
    }
  }

  function run(effect: () => void): void {
    try {
      effect();
    } catch (e) {
      o.effectFailed(e);
    }
  }

  async function write<T>(work: Work, unit: (tx: Tx) => Promise<T>): Promise<T> {
    const [value, wakes] = await retried(work, () => attempt(work, unit));
    await o.notify(wakes);
    return value;
  }

  async function once<T>(
    work: Work,
    take: () => { sql: string; params: readonly Param[] },
    committed?: (rows: T[]) => void,
    wakes?: ReadonlyArray<readonly [WakeTopic, string]>,
  ): Promise<T[]> {
    // Made at the first attempt, once its connection is free; every later attempt runs it again.
    let statement: { sql: string; params: readonly Param[] } | undefined;
    const rows = await retried(work, async () => {
      statement ??= take();
      // After take(): a batch made there learns of the refusal (connects.ts fails its waiters by it).
      refuse();
      counted(work, 'unit');
      let rows: T[];
      try {
        rows = await lone.all<T>(withClock(statement.sql), ...statement.params);
      } catch (e) {
        throw await asMigrating(e);
      }
      if (TRACE) noteWork(work, 'done');
      if (committed) run(() => committed(rows));
      if (wakes !== undefined && rows.length > 0) {
        for (const [topic, key] of wakes) run(() => o.wake(topic, key));
        run(o.committed);
      }
      return rows;
    });
    if (wakes !== undefined && rows.length > 0) await o.notify(wakes);
    return rows;
  }

  const shared = {
    async health() {
      try {
        const v = await o.lanes.run('request', () => schemaVersion(o.pool));
        if (v === SCHEMA_VERSION) return { ok: true, reason: null };
        return { ok: false, reason: `the database is at schema version ${v ?? 'none'}; this Hub needs ${SCHEMA_VERSION}` };
      } catch (e) {
        return { ok: false, reason: `the database does not answer: ${e instanceof Error ? e.message : String(e)}` };
      }
    },
    close: () => {
      closed = true;
      return o.pool.end();
    },
  };

  /**
   * The store as `work`: a view made per request (and once for each background work), its read
   * statements made only when it reads. Cheaper than what it replaced: an AsyncLocalStorage's hook on
   * every promise of the process (work.ts).
   */
  const as = (work: Work): Store => {
    let reads: Sql | undefined;
    // Reads outside a unit: each takes its pool connection through the lanes (`read`), or runs on one admission already had (`reading`).
    const readsOf = () => (reads ??= statements(o.pool, statement, o.types, () => counted(work, 'read'), true, o.migrating?.timedOut));
    // Data properties only: an accessor in an object literal leaves V8 the object in dictionary mode.
    return {
      kind: 'postgres',
      shared: true,
      as,
      read: laned(readsOf, (fn) => onLane(work, fn)),
      reading: (fn) => onLane(work, () => fn(readsOf())),
      write: (unit) => write(work, unit),
      once: (sql, params, committed, wakes) => once(work, () => ({ sql, params }), committed, wakes),
      onceTaken: (take, committed) => once(work, take, committed),
      ...shared,
    };
  };

  return { ...as(OTHER), clock, pool: o.pool, roundTrips };
}
