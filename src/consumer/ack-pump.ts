import { EXIT } from '../core/index.js';
import type { Acker } from './acker.js';
import { lockLost } from './ingest.js';
import { stop, type Stop } from './stops.js';

/**
 * Runs ack rounds beside the ingest queue, one at a time: ingest never waits for the Hub's
 * answer to an ack, and a burst of requests (cursor moves, batches) costs one more round,
 * not one each. Safe beside ingest because every ledger call is synchronous and a round
 * names only entries the ledger held when it began.
 */
export interface AckPumpDeps {
  acker: Acker;
  /** Ledger what was spooled and persist the seen jtis: before any ack (throws a write error). */
  commit(): void;
  /** After a round's acks: remove what is printed, settled and past retention from the spool. */
  compact?(): void;
  lockHealthy(): boolean;
  stopped(): boolean;
  stopWith(s: Stop): void;
  log(text: string): void;
}

export class AckPump {
  private inFlight: Promise<void> | null = null;
  private again = false;

  constructor(private readonly d: AckPumpDeps) {}

  request(): void {
    if (this.d.stopped()) return;
    if (this.inFlight) {
      this.again = true;
      return;
    }
    this.inFlight = this.rounds().finally(() => {
      this.inFlight = null;
      // A request between the rounds' last check of `again` and this callback (a microtask apart)
      // found a round in flight and was folded into it after all its checks: run it now.
      if (this.again) this.request();
    });
  }

  /** Resolves when no round is in flight (for a clean stop). */
  async settled(): Promise<void> {
    await this.inFlight;
  }

  private async rounds(): Promise<void> {
    try {
      do {
        this.again = false;
        await this.round();
      } while (this.again && !this.d.stopped());
    } catch (e) {
      // A ledger or seen-jti write that failed: never retried (fsyncgate).
      this.d.stopWith(
        stop(
          EXIT.internal,
          'spool_write_failed',
          `${e instanceof Error ? e.message : String(e)}. Not retried: nothing more is acked, and every entry not yet acknowledged stays at the Hub and is redelivered to the next consumer`,
        ),
      );
    }
  }

  private async round(): Promise<void> {
    if (this.d.stopped()) return;
    if (!this.d.lockHealthy()) {
      this.d.stopWith(lockLost());
      return;
    }
    this.d.commit();
    const r = await this.d.acker.flush();
    if (r.ok && !this.d.stopped()) this.d.compact?.();
    if (r.ok || this.d.stopped()) return;
    const disposition = r.disposition;
    if (disposition.kind === 'stop') this.d.stopWith(disposition.stop);
    // A failed ack changes nothing on disk; the next round (cursor move or heartbeat) retries it.
    else this.d.log(`${disposition.message}; the ack is retried on the next round`);
  }
}
