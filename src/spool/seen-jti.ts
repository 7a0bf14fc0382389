import { unlinkSync } from 'node:fs';
import path from 'node:path';
import { fail, ok, type Result } from '../core/index.js';
import { fsyncDir } from '../util/fs-durable.js';
import { AppendLog, type TailCut } from './append-log.js';
import { openLine, readLines, sealLine } from './line.js';
import { STATE_FILES, readRecord } from './records.js';

/** Where builds before session 13 kept the set: one JSON object `{jti: t}`, replaced whole on every persist. */
export const LEGACY_SEEN_JTI = 'seen-jti.json';

function parseLegacy(x: unknown): Result<Map<string, number>> {
  if (typeof x !== 'object' || x === null || Array.isArray(x)) return fail('the seen-jti set is not a JSON object');
  const seen = new Map<string, number>();
  for (const [jti, t] of Object.entries(x)) {
    if (typeof t !== 'number' || !Number.isFinite(t)) return fail(`the seen-jti set has a non-numeric t for ${JSON.stringify(jti)}`);
    seen.set(jti, t);
  }
  return ok(seen);
}

type Pair = [jti: string, t: number];

/** One line of the log: `{"seen":[[jti, t], …],"sum":…}`, the jtis one persist added. */
function parseLine(x: unknown): Result<Pair[]> {
  const pairs = typeof x === 'object' && x !== null && !Array.isArray(x) ? (x as { seen?: unknown }).seen : undefined;
  if (!Array.isArray(pairs)) return fail('a seen-jti line without its "seen" list');
  for (const p of pairs) {
    if (!Array.isArray(p) || p.length !== 2 || typeof p[0] !== 'string') return fail('a seen-jti line with a pair that is not [jti, t]');
    if (typeof p[1] !== 'number' || !Number.isFinite(p[1])) return fail(`the seen-jti set has a non-numeric t for ${JSON.stringify(p[0])}`);
  }
  return ok(pairs as Pair[]);
}

/**
 * The log's valid prefix. Only its tail may be cut: the one append a kill or a power cut
 * interrupted was never followed by an ack. A line that fails its sum with a valid line after
 * it is damage to jtis already acknowledged — forgetting them could let a replay through, so
 * the open fails instead (the set is unreadable, as a damaged seen-jti.json always was).
 */
function replay(file: string): { seen: Map<string, number>; pairs: number; end: number; stop: string | null } {
  const seen = new Map<string, number>();
  let pairs = 0;
  let end = 0;
  let stop: string | null = null;
  for (const line of readLines(file)) {
    const opened = openLine(line.text);
    const parsed = opened.ok ? parseLine(opened.value) : opened;
    if (stop !== null) {
      if (parsed.ok) throw new Error(`${stop}, with valid lines after it (damage, not a torn write)`);
      continue;
    }
    if (!parsed.ok) {
      stop = `byte ${line.start}: ${parsed.reason}`;
      continue;
    }
    for (const [jti, t] of parsed.value) seen.set(jti, t);
    pairs += parsed.value.length;
    end = line.end;
  }
  return { seen, pairs, end, stop };
}

/** Rewrite the log once it holds this many pairs and four times as many as are live (pruned ones are dead). */
const COMPACT_MIN_PAIRS = 1024;

/**
 * The jtis this entry has accepted, with their signature's `t` (`seen-jti.ndjson`). Kept for
 * the replay window: a jti older than that fails the freshness check anyway, so it can be
 * forgotten. Persist before acking what was added (a batch may share one write).
 *
 * An append-only log of sealed lines, one per persist holding the jtis added since the last:
 * one write and one fsync in the ack round (an atomic replace of the whole set cost a temp
 * file's fsync, a rename and the directory's fsync — docs/performance.md, session 13). Pruning
 * only forgets in memory; a pruned jti read back at the next open is older than the window and
 * pruned again. The log is rewritten whole (atomically) when pruned pairs dominate it.
 */
export class SeenJti {
  /** Added since the last persist. */
  private readonly fresh = new Map<string, number>();
  /** Why a persist failed: the set is then never written again (a failed fsync is not retried). */
  private broken: string | null = null;

  private constructor(
    private readonly log: AppendLog,
    private readonly seen: Map<string, number>,
    /** Pairs the file holds, pruned ones included. */
    private pairs: number,
  ) {}

  /**
   * Open the log (consumer only, under the lock), cutting a torn tail. Absent → empty.
   * Unreadable is a failure, not empty: forgetting the set would let a replay through. A
   * seen-jti.json an older build left is folded in: appended to the log, then removed.
   */
  static load(dir: string): Result<SeenJti> {
    const legacy = readRecord(dir, LEGACY_SEEN_JTI, parseLegacy);
    if (legacy.state === 'unreadable') return fail(legacy.reason);
    const opened = AppendLog.open({ file: path.join(dir, STATE_FILES.seenJti), what: 'seen-jti set', error: (_kind, message) => new Error(message) }, replay);
    if (!opened.ok) return opened;
    const { log, valid } = opened.value;
    const set = new SeenJti(log, valid.seen, valid.pairs);
    if (legacy.state === 'ok') {
      const file = path.join(dir, LEGACY_SEEN_JTI);
      try {
        for (const [jti, t] of legacy.value) if (!set.seen.has(jti)) set.add(jti, t);
        set.persist();
        // The log holds every jti first: a kill before the unlink leaves both, and the next open folds again.
        unlinkSync(file);
        fsyncDir(dir);
      } catch (e) {
        log.close();
        return fail(`cannot move ${file} into ${log.file}: ${(e as Error).message}`);
      }
    }
    return ok(set);
  }

  has(jti: string): boolean {
    return this.seen.has(jti);
  }

  add(jti: string, t: number): void {
    this.seen.set(jti, t);
    this.fresh.set(jti, t);
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
        this.fresh.delete(jti);
        removed += 1;
      }
    }
    return removed;
  }

  /**
   * Append what was added since the last persist (nothing added, no write). A failure names
   * the file and leaves the set broken, like the spool and the ledger: the consumer stops acking.
   */
  persist(): void {
    const file = this.log.file;
    if (this.broken !== null) throw new Error(`the seen-jti set ${file} is broken: it failed earlier (${this.broken}); not retried`);
    if (this.fresh.size === 0) return;
    try {
      if (this.pairs + this.fresh.size >= COMPACT_MIN_PAIRS && this.pairs + this.fresh.size > 4 * this.seen.size) {
        this.log.replace(this.seen.size === 0 ? '' : sealLine({ seen: [...this.seen] }) + '\n');
        this.pairs = this.seen.size;
      } else {
        this.log.append(sealLine({ seen: [...this.fresh] }) + '\n');
        this.pairs += this.fresh.size;
      }
    } catch (e) {
      // The append log's message names the file and the call that failed.
      this.broken = (e as Error).message;
      throw e;
    }
    this.fresh.clear();
  }

  /** What open cut off the tail (an interrupted append), or null. */
  get recovery(): TailCut | null {
    return this.log.cut;
  }

  close(): void {
    this.log.close();
  }
}
