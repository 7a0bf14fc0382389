import path from 'node:path';
import { fail, ok, type Result } from '../core/index.js';
import { STATE_FILES, readRecord, writeRecord } from './records.js';

function parseSeen(x: unknown): Result<Map<string, number>> {
  if (typeof x !== 'object' || x === null || Array.isArray(x)) return fail('the seen-jti set is not a JSON object');
  const seen = new Map<string, number>();
  for (const [jti, t] of Object.entries(x)) {
    if (typeof t !== 'number' || !Number.isFinite(t)) return fail(`the seen-jti set has a non-numeric t for ${JSON.stringify(jti)}`);
    seen.set(jti, t);
  }
  return ok(seen);
}

/**
 * The jtis this entry has accepted, with their signature's `t` (`seen-jti.json`, `{jti: t}`).
 * Kept for the replay window: a jti older than that fails the freshness check anyway, so
 * it can be forgotten. Persist before acking what was added (a batch may share one write).
 */
export class SeenJti {
  private dirty = false;
  /** Why a persist failed: the set is then never written again (a failed fsync is not retried). */
  private broken: string | null = null;

  private constructor(
    private readonly dir: string,
    private readonly seen: Map<string, number>,
  ) {}

  /** Absent → empty. Unreadable is a failure, not empty: forgetting the set would let a replay through. */
  static load(dir: string): Result<SeenJti> {
    const r = readRecord(dir, STATE_FILES.seenJti, parseSeen);
    if (r.state === 'unreadable') return fail(r.reason);
    return ok(new SeenJti(dir, r.state === 'ok' ? r.value : new Map()));
  }

  has(jti: string): boolean {
    return this.seen.has(jti);
  }

  add(jti: string, t: number): void {
    this.seen.set(jti, t);
    this.dirty = true;
  }

  get size(): number {
    return this.seen.size;
  }

  /** Forget jtis whose t is older than the window (the same now and window the freshness check uses). Returns how many. */
  prune(nowSeconds: number, windowSeconds: number): number {
    const oldest = nowSeconds - windowSeconds;
    let removed = 0;
    for (const [jti, t] of this.seen) {
      if (t < oldest) {
        this.seen.delete(jti);
        removed += 1;
      }
    }
    if (removed > 0) this.dirty = true;
    return removed;
  }

  /**
   * Atomic replace, only when something changed since the last persist. A failure names the
   * file and leaves the set broken, like the spool and the ledger: the consumer stops acking.
   */
  persist(): void {
    const file = path.join(this.dir, STATE_FILES.seenJti);
    if (this.broken !== null) throw new Error(`the seen-jti set ${file} is broken: it failed earlier (${this.broken}); not retried`);
    if (!this.dirty) return;
    try {
      writeRecord(this.dir, STATE_FILES.seenJti, Object.fromEntries(this.seen));
    } catch (e) {
      this.broken = (e as Error).message;
      throw new Error(`persisting the seen-jti set ${file} failed: ${this.broken}; not retried`);
    }
    this.dirty = false;
  }
}
