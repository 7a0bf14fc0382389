import { streamsSeen } from './sessions.js';
import type { Store } from './sql.js';
import { runAs } from './work.js';

type Ended = { sessionId: string; home: string | null };

/**
 * Records that streams ended (their sessions and holders were seen until then), in batches:
 * every end queued while one write is in flight goes into the next, as one set-based
 * statement. A stream ends once per hold (10,000 streams at a 55 s hold are ~180 ends/s), and
 * a unit per end would cost the database as much again as the connects themselves.
 */
export class StreamEnds {
  private queued: Ended[] = [];
  private flushing: Promise<void> | null = null;

  constructor(
    private readonly store: Store,
    private readonly log: (line: string) => void,
  ) {}

  record(sessionId: string, home: string | null): void {
    this.queued.push({ sessionId, home });
    this.flushing ??= this.flush();
  }

  /** Resolves once every end recorded so far is written (or its write failed and was logged). */
  async drain(): Promise<void> {
    while (this.flushing !== null) await this.flushing;
  }

  private async flush(): Promise<void> {
    // Let the ends of this turn of the event loop join the batch.
    await new Promise<void>((resolve) => setImmediate(resolve));
    while (this.queued.length > 0) {
      const batch = this.queued;
      this.queued = [];
      try {
        await runAs({ name: 'presence' }, () => this.store.write((tx) => streamsSeen(tx, batch)));
      } catch (e) {
        this.log(`hub: recording the end of ${batch.length} stream(s) failed: ${e instanceof Error ? e.message : String(e)}`);
      }
    }
    this.flushing = null;
  }
}
