import { isSameProcessAlive, sameProcess, type ConsumerRecord, type ProcessStamp, type StateDir } from '../spool/index.js';
import type { Timers } from '../util/clock.js';

/**
 * What became of the connection a run just launched. Two runs that both found no live record
 * (the second within the first connection's start-up, about half a second) each launch one;
 * one takes the entry's lock and the other stops. The launching run learns which before it
 * says what it started:
 * - `own`: the record is the launched connection's (running, or already stopped: the wait
 *   that follows reports a stop);
 * - `lost`: it exited, and the record names another live connection, which drains the entry;
 * - `unknown`: it exited without a record (the wait that follows reports it as died), or the
 *   bound or a stop request came first.
 */
export type Launched = { kind: 'own' } | { kind: 'lost'; record: ConsumerRecord } | { kind: 'unknown' };

/** How long a run waits for the connection it launched to take the entry: a start-up, on a loaded machine. */
export const LAUNCHED_WAIT_MS = 10_000;

const POLL_MAX_MS = 50;

export async function awaitLaunched(
  stateDir: StateDir,
  launched: ProcessStamp,
  /** The record read before launching (a stopped or dead predecessor): not news. */
  baseline: ConsumerRecord | null,
  o: { clock: Timers; boundMs: number; signal: AbortSignal },
): Promise<Launched> {
  const current = (): ConsumerRecord | null => {
    const rec = stateDir.read('consumer');
    return rec.state === 'ok' && !(baseline && sameProcess(rec.value, baseline)) ? rec.value : null;
  };
  const deadline = o.clock.monotonic() + o.boundMs;
  // Polled, short then backing off: the start-up takes a few hundred milliseconds, and a
  // connection that loses the lock writes no file to watch for.
  let pollMs = 5;
  for (;;) {
    const rec = current();
    if (rec && sameProcess(rec, launched)) return { kind: 'own' };
    if (isSameProcessAlive(launched) === 'dead') {
      // It may have recorded itself just before it exited: read once more now that it is gone.
      const last = current();
      if (last && sameProcess(last, launched)) return { kind: 'own' };
      if (last && last.state !== 'stopped' && isSameProcessAlive(last) !== 'dead') return { kind: 'lost', record: last };
      return { kind: 'unknown' };
    }
    const left = deadline - o.clock.monotonic();
    if (left <= 0 || o.signal.aborted) return { kind: 'unknown' };
    await o.clock.sleep(Math.min(pollMs, left), o.signal);
    pollMs = Math.min(POLL_MAX_MS, pollMs * 1.5);
  }
}
