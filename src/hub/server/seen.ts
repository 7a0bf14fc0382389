import type { FailureLog } from './failure-log.js';
import { streamsSeen } from './sessions.js';
import type { Store } from './sql.js';
import { hop, TRACE } from '../../util/trace.js';

/**
 * Records that streams ended (their sessions and holders were seen until then), in batches: the
 * ends of `delayMs` go into one set-based statement, a statement of its own (`Store.once`: one
 * round trip on PostgreSQL). A stream ends once per hold bound — 10,000 streams at deploy/'s 30 s
 * hold are ~330 ends/s — and its client reconnects at once: that connect's renewal writes the
 * session seen later than the end would, so an end whose session connects here meanwhile is
 * dropped, and a fleet's reconnects cost the database no end writes at all. An end younger than a
 * quarter of `delayMs` when its batch is taken waits for the next one: its reconnect's renewal
 * (gathered for 25 ms, then a round trip) was most likely under way, and written it was ~1 % of
 * every end, one statement a second per instance (session 19, idle11).
 */
export class StreamEnds {
  /** Session → the ended stream's home and when it ended (ms, monotonic), oldest first. */
  private queued = new Map<string, { home: string | null; at: number }>();
  private flushing: Promise<void> | null = null;

  constructor(
    private readonly store: Store,
    /** Where a batch's failure goes: logged when the writes start failing and when they work again. */
    private readonly failures: Pick<FailureLog, 'failed' | 'worked'>,
    /** How long ends gather before they are written: well inside the presence and holder-stale windows. */
    private readonly delayMs: number,
  ) {}

  record(sessionId: string, home: string | null): void {
    // Taken out first, so the map stays in the order the ends came: a batch takes a prefix of it.
    this.queued.delete(sessionId);
    this.queued.set(sessionId, { home, at: performance.now() });
    this.flushing ??= this.flush();
  }

  /** A stream of `sessionId` connected here (its renewal committed): the session was seen now. */
  connected(sessionId: string): void {
    this.queued.delete(sessionId);
  }

  /** Resolves once every end recorded so far is written (or its write failed and was logged). */
  async drain(): Promise<void> {
    while (this.flushing !== null) await this.flushing;
  }

  private async flush(): Promise<void> {
    while (this.queued.size > 0) {
      // Let the ends (and the reconnects) of the next `delayMs` join the batch — every batch, not
      // only the first: ends recorded while a batch was being written went out the moment it
      // returned, before their reconnects could drop them (pool7, session 15: 402–785 end rows per
      // 20 s at 10,000 streams, load ≤ 3, where the fleet's reconnects should write none).
      await new Promise<void>((resolve) => (this.delayMs > 0 ? setTimeout(resolve, this.delayMs) : setImmediate(resolve)));
      const batch = this.take();
      if (batch.length === 0) continue;
      // The push trace only: the ends this statement writes (their reconnects did not come in time).
      if (TRACE) hop('ev.ends', String(batch.length));
      try {
        await streamsSeen(this.store, batch);
        this.failures.worked();
      } catch (e) {
        this.failures.failed(e);
      }
    }
    this.flushing = null;
  }

  /** The ends older than the grace, taken out of the queue (the younger wait one more delay: at most two in all). */
  private take(): Array<{ sessionId: string; home: string | null }> {
    const before = performance.now() - this.delayMs / 4;
    const batch: Array<{ sessionId: string; home: string | null }> = [];
    for (const [sessionId, end] of this.queued) {
      if (end.at > before) break;
      batch.push({ sessionId, home: end.home });
    }
    for (const { sessionId } of batch) this.queued.delete(sessionId);
    return batch;
  }
}
