import type { SqliteStatement } from './sqlite-driver.js';
import type { Db } from './store.js';
import { stamp, TRACE } from '../../util/trace.js';

type Effect = () => void;

interface Unit {
  run: () => unknown;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

export interface CommitHooks {
  /** Runs after every committed batch, after its units' effects and before their answers (the Hub wakes its bus here). */
  committed: Effect;
  /** Hears an after-commit effect that threw: its unit's data is committed, so its answer stands. */
  effectFailed: (error: unknown) => void;
  /** Told when each batch's transaction begins and ends, and when a unit's writes were rolled back inside it. */
  batches?: BatchObserver;
}

export interface BatchObserver {
  begun(): void;
  /** A unit's writes were rolled back to its savepoint: what it did is undone. */
  doubt(): void;
  /** The batch's transaction ended: committed, or rolled back as a whole. */
  ended(committed: boolean): void;
}

type Outcome = { ok: true; value: unknown; effects: Effect[] } | { ok: false; error: unknown };

/**
 * Group commit for the Hub's write path. With synchronous=FULL every commit is an fsync on
 * the event loop, so ten writes in flight used to wait behind ten fsyncs. Units queued
 * while a flush is pending (the same turn of the event loop, or the requests that arrived
 * while the previous commit blocked it) run in ONE outer transaction, one fsync.
 *
 * Each unit runs in its own savepoint: a unit that throws rolls back only its own writes
 * and rejects only its own promise. Every promise settles only after the outer COMMIT has
 * returned, so no request is answered before its data is durable; if the commit fails,
 * every unit of the batch is rejected (none of it was written).
 *
 * A unit may be async (the store seam's statements return promises) but must await nothing
 * but its own statements: units run one after another inside the transaction, and reads
 * from outside wait for the batch (see {@link GroupCommit.idle}).
 */
export class GroupCommit {
  private queue: Unit[] = [];
  private scheduled = false;
  /** The effects of the unit running now; null outside a flush. */
  private effects: Effect[] | null = null;

  /** The transaction statements every batch runs, compiled once (exec parses its SQL on every call). */
  private readonly sql: Record<'begin' | 'commit' | 'rollback' | 'savepoint' | 'release', SqliteStatement>;

  constructor(
    private readonly db: Db,
    private readonly hooks: CommitHooks,
  ) {
    this.sql = {
      begin: db.prepare('BEGIN'),
      commit: db.prepare('COMMIT'),
      rollback: db.prepare('ROLLBACK'),
      savepoint: db.prepare('SAVEPOINT unit'),
      release: db.prepare('RELEASE unit'),
    };
  }

  /** Settles when a batch has left its units and answers behind (what {@link drain} waits for). */
  private flushing: Promise<void> | null = null;
  /** Settles when the running batch's transaction has ended: a read outside a unit never sees a batch half-written. */
  private writing: Promise<void> | null = null;

  /** Run `unit` in the next batch; settles with its result (or its throw) once the batch is committed. */
  run<T>(unit: () => T | Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ run: unit, resolve: resolve as (value: unknown) => void, reject });
      if (this.scheduled) return;
      this.scheduled = true;
      // setImmediate, not a microtask: every request parsed in this poll phase joins the batch.
      setImmediate(() => {
        const done = this.flush().finally(() => {
          if (this.flushing === done) this.flushing = null;
        });
        this.flushing = done;
      });
    });
  }

  /** Resolves once no batch's transaction is open (at once when none is). */
  idle(): Promise<void> {
    return this.writing ?? Promise.resolve();
  }

  /** Whether a batch's transaction is open now: a read outside a unit must wait for {@link idle}. */
  get busy(): boolean {
    return this.writing !== null;
  }

  /**
   * Resolves once every unit queued so far has been committed or refused. {@link idle} only
   * waits for a batch already running; a unit queued in this turn of the event loop has its
   * batch scheduled but not started, and closing the store under it rejects it unhandled.
   */
  async drain(): Promise<void> {
    while (this.scheduled || this.flushing) {
      await (this.flushing ?? new Promise<void>((resolve) => setImmediate(resolve)));
    }
  }

  /**
   * Tell the outside world (an open stream) about a write only once it is durable: inside
   * a unit, after the batch commits, and never if the unit or the batch fails. Outside a
   * batch the caller has committed already, so it runs at once.
   */
  afterCommit(effect: Effect): void {
    if (this.effects) this.effects.push(effect);
    else effect();
  }

  private async flush(): Promise<void> {
    this.scheduled = false;
    const batch = this.queue;
    this.queue = [];
    const outcomes: Outcome[] = [];
    // A unit alone in its batch needs no savepoint: rolling back the transaction is rolling back the unit.
    const alone = batch.length === 1;
    let written!: () => void;
    this.writing = new Promise<void>((resolve) => (written = resolve));
    const observer = this.hooks.batches;
    let ended = false;
    const end = (committed: boolean) => {
      ended = true;
      observer?.ended(committed);
    };
    try {
      observer?.begun();
      this.sql.begin.run();
      for (const u of batch) outcomes.push(await this.runUnit(u, alone));
      if (alone && !outcomes[0]!.ok) {
        this.sql.rollback.run();
        end(false);
      } else {
        this.sql.commit.run();
        end(true);
      }
      // The trace's hub.committed is this instant: the answers it would be timed by now follow the pushes.
      if (TRACE) stamp('hub.commit');
    } catch (error) {
      if (this.db.inTransaction) this.sql.rollback.run();
      if (!ended) end(false);
      for (const u of batch) u.reject(error);
      return;
    } finally {
      this.effects = null;
      this.writing = null;
      written();
    }
    for (const o of outcomes) if (o.ok) for (const effect of o.effects) this.runEffect(effect);
    this.runEffect(this.hooks.committed);
    // The answers go on the next turn of the event loop. What the hook woke — a stream's page of
    // the rows just committed, read on the event loop (SQLite) — is written in this turn's
    // microtasks, before them: a sender's 202 is not on the push's path, and writing it first
    // (its serialisation and its socket write) held every push of the batch behind it.
    await new Promise<void>((resolve) => setImmediate(resolve));
    batch.forEach((u, i) => {
      const o = outcomes[i]!;
      if (o.ok) u.resolve(o.value);
      else u.reject(o.error);
    });
  }

  private async runUnit(u: Unit, alone: boolean): Promise<Outcome> {
    const effects: Effect[] = [];
    this.effects = effects;
    if (!alone) this.sql.savepoint.run();
    try {
      const value = await u.run();
      if (!alone) this.sql.release.run();
      return { ok: true, value, effects };
    } catch (error) {
      // Some errors (SQLITE_FULL, I/O errors) make SQLite roll back the whole transaction,
      // taking the earlier units with it: the batch fails as a whole.
      if (!this.db.inTransaction) throw error;
      if (!alone) this.db.exec('ROLLBACK TO unit; RELEASE unit');
      this.hooks.batches?.doubt();
      return { ok: false, error };
    }
  }

  private runEffect(effect: Effect): void {
    try {
      effect();
    } catch (error) {
      this.hooks.effectFailed(error);
    }
  }
}
