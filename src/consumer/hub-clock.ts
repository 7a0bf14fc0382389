import type { Clock } from '../util/clock.js';
import type { ClockReading } from './verify.js';

/**
 * What we know of the Hub's clock relative to ours, for telling a wrong local clock apart
 * from a stale `t`. The capability's server_time (millisecond precision) is the reading; a
 * Date header (whole seconds) stands in only when the Hub sent no server_time. The offset
 * is only ever reported, never used to compute a time remaining.
 */
export class HubClock {
  private current: ClockReading | null = null;
  private fromServerTime = false;

  constructor(private readonly clock: Clock) {}

  get reading(): ClockReading | null {
    return this.current;
  }

  note(instant: string | null, source: 'server_time' | 'date'): void {
    if (instant === null || (source === 'date' && this.fromServerTime)) return;
    const hub = Date.parse(instant);
    if (Number.isNaN(hub)) return;
    const label = source === 'server_time' ? "the Hub's server_time" : "the Hub's Date header";
    this.current = { offsetMs: hub - this.clock.now(), source: `${label} at ${instant}` };
    this.fromServerTime ||= source === 'server_time';
  }
}
