import type { Clock } from '../../util/clock.js';
import { refusedForMigration } from './database-errors.js';
import type { HubLog } from './log-sink.js';

/** At most one "still failing" line per this long while a work keeps failing. */
export const REMIND_MS = 60_000;

/** The background work whose failures are logged on change (the `work` label and JSON field). */
export type BackgroundWork = 'sweep' | 'presence' | 'stream_ends' | 'push' | 'listener' | 'notifier' | 'pool';

export interface FailureLogOptions {
  work: BackgroundWork;
  /** What the lines call it ("the sweep", "the database listener"). */
  what: string;
  /** Our own clock: the lines' instants and the reminder's period. */
  clock: Clock;
  log: HubLog;
  /** Applied to every cause (the database URL's password), in the line and in its fields. */
  redact?: (text: string) => string;
  /** Every failure, counted (the metric), whether or not it is logged. */
  counted: (work: BackgroundWork) => void;
  remindMs?: number;
}

/**
 * The log of one timer-driven work of the Hub (the sweep, the presence write, a listener's
 * reconnects, …): a line when it starts failing, with the cause; at most one a `remindMs` while it
 * keeps failing, with the count; one when it works again. It runs once a second or more often, so
 * a database down for ten minutes logged hundreds of the same line and hid when it began and ended.
 * Work refused for another version's migration is neither: the migration watch logs that, once.
 */
export class FailureLog {
  /** Since the first failure of the current run (ms, ours): null while it works. */
  private since: { wall: number; monotonic: number } | null = null;
  private failures = 0;
  private remindedAt = 0;
  private readonly remindMs: number;

  constructor(private readonly o: FailureLogOptions) {
    this.remindMs = o.remindMs ?? REMIND_MS;
  }

  /** `where` goes before the cause (a push's session). */
  failed(e: unknown, where?: string): void {
    if (refusedForMigration(e)) return;
    this.o.counted(this.o.work);
    const message = e instanceof Error ? e.message : String(e);
    const cause = (this.o.redact ?? String)(where === undefined ? message : `${where}: ${message}`);
    const now = this.o.clock.monotonic();
    this.failures += 1;
    if (this.since === null) {
      this.since = { wall: this.o.clock.now(), monotonic: now };
      this.remindedAt = now;
      this.o.log(`hub: ${this.o.what} failed: ${cause} (logged again at most once a minute while it keeps failing)`, {
        event: 'background_failing',
        work: this.o.work,
        since: new Date(this.since.wall).toISOString(),
        cause,
      });
      return;
    }
    if (now - this.remindedAt < this.remindMs) return;
    this.remindedAt = now;
    const since = new Date(this.since.wall).toISOString();
    this.o.log(`hub: ${this.o.what} still failing: ${this.failures} failures since ${since}; the last: ${cause}`, {
      event: 'background_still_failing',
      work: this.o.work,
      failures: this.failures,
      since,
      cause,
    });
  }

  worked(): void {
    if (this.since === null) return;
    const seconds = Math.round((this.o.clock.monotonic() - this.since.monotonic) / 100) / 10;
    const since = new Date(this.since.wall).toISOString();
    this.o.log(`hub: ${this.o.what} working again after ${this.failures} failure(s) over ${seconds} s`, {
      event: 'background_working_again',
      level: 'info',
      work: this.o.work,
      failures: this.failures,
      since,
      seconds,
    });
    this.since = null;
    this.failures = 0;
  }
}
