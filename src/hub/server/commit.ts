import type { Db } from './store.js';

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
 * A unit must be synchronous and must not await: it runs inside the transaction.
 */
export class GroupCommit {
  private queue: Unit[] = [];
  private scheduled = false;
  /** The effects of the unit running now; null outside a flush. */
  private effects: Effect[] | null = null;

  constructor(
    private readonly db: Db,
    private readonly hooks: CommitHooks,
  ) {}

  /** Run `unit` in the next batch; settles with its result (or its throw) once the batch is committed. */
  run<T>(unit: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ run: unit, resolve: resolve as (value: unknown) => void, reject });
      if (this.scheduled) return;
      this.scheduled = true;
      // setImmediate, not a microtask: every request parsed in this poll phase joins the batch.
      setImmediate(() => this.flush());
    });
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

  private flush(): void {
    this.scheduled = false;
    const batch = this.queue;
    this.queue = [];
    let outcomes: Outcome[];
    try {
      outcomes = this.db.transaction((): Outcome[] => batch.map((u) => this.runUnit(u)))();
    } catch (error) {
      for (const u of batch) u.reject(error);
      return;
    } finally {
      this.effects = null;
    }
    for (const o of outcomes) if (o.ok) for (const effect of o.effects) this.runEffect(effect);
    this.runEffect(this.hooks.committed);
    batch.forEach((u, i) => {
      const o = outcomes[i]!;
      if (o.ok) u.resolve(o.value);
      else u.reject(o.error);
    });
  }

  private runUnit(u: Unit): Outcome {
    const effects: Effect[] = [];
    this.effects = effects;
    try {
      // Nested inside the batch, better-sqlite3's transaction is a SAVEPOINT.
      return { ok: true, value: this.db.transaction(u.run)(), effects };
    } catch (error) {
      // Some errors (SQLITE_FULL, I/O errors) make SQLite roll back the whole transaction,
      // taking the earlier units with it: the batch fails as a whole.
      if (!this.db.inTransaction) throw error;
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
