import { isSameProcessAlive, type ConsumerRecord, type StateEntry } from '../../../spool/index.js';
import type { Clock } from '../../../util/clock.js';
import { fail, ok, type Result } from '../../../util/result.js';
import { sameProcess } from '../bridge/attendance.js';

export type Running = { kind: 'none'; why: string } | { kind: 'local'; record: ConsumerRecord } | { kind: 'elsewhere'; record: ConsumerRecord };

/** Whether a background connection runs for this entry now: its record, checked by pid AND start time. */
export function runningConnection(entry: StateEntry): Running {
  const read = entry.read('consumer');
  if (read.state === 'absent') return { kind: 'none', why: 'no background connection has run here' };
  if (read.state === 'unreadable') return { kind: 'none', why: `its record could not be read (${read.reason})` };
  const r = read.value;
  if (r.state === 'stopped') return { kind: 'none', why: `pid ${r.pid} stopped (${r.stop_reason ?? 'no reason recorded'})` };
  const alive = isSameProcessAlive(r);
  if (alive === 'dead') return { kind: 'none', why: `pid ${r.pid} is gone` };
  return alive === 'alive' ? { kind: 'local', record: r } : { kind: 'elsewhere', record: r };
}

const tick = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * Ask a local connection to stop (SIGTERM: a clean stop that records itself) and wait until
 * it has: its record says stopped, or the process is gone. Returns the record it left.
 */
export async function stopConnection(entry: StateEntry, r: ConsumerRecord, clock: Clock, waitMs: number): Promise<Result<ConsumerRecord | null>> {
  try {
    process.kill(r.pid, 'SIGTERM');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ESRCH') return fail(`could not signal the background connection pid ${r.pid}: ${(e as Error).message}`);
  }
  const until = clock.monotonic() + waitMs;
  for (;;) {
    const now = entry.read('consumer');
    const mine = now.state === 'ok' && sameProcess(now.value, r) ? now.value : null;
    if (mine?.state === 'stopped') return ok(mine);
    if (isSameProcessAlive(r) === 'dead') return ok(mine);
    if (clock.monotonic() >= until) {
      return fail(
        `the background connection pid ${r.pid} on ${r.host} did not stop within ${Math.round(waitMs / 1000)} s of SIGTERM, so nothing was closed; ` +
          `it may be wedged — see ${entry.path('bridge.log')}, then run oh-hai session close again`,
      );
    }
    await tick(20);
  }
}
