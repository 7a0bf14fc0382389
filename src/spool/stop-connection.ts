import { isSameProcessAlive, sameProcess, stopAndWait } from './process.js';
import type { ConsumerRecord } from './records.js';
import type { StateDir } from './state-dir.js';
import type { Timers } from '../util/clock.js';
import { fail, ok, type Result } from '../core/index.js';

export type Running = { kind: 'none'; why: string } | { kind: 'local'; record: ConsumerRecord } | { kind: 'elsewhere'; record: ConsumerRecord };

/** Whether a background connection runs for this entry now: its record, checked by pid AND start time. */
export function runningConnection(stateDir: StateDir): Running {
  const read = stateDir.read('consumer');
  if (read.state === 'absent') return { kind: 'none', why: 'no background connection has run here' };
  if (read.state === 'unreadable') return { kind: 'none', why: `its record could not be read (${read.reason})` };
  const r = read.value;
  if (r.state === 'stopped') return { kind: 'none', why: `pid ${r.pid} stopped (${r.stop_reason ?? 'no reason recorded'})` };
  const alive = isSameProcessAlive(r);
  if (alive === 'dead') return { kind: 'none', why: `pid ${r.pid} is gone` };
  return alive === 'alive' ? { kind: 'local', record: r } : { kind: 'elsewhere', record: r };
}

/**
 * Ask a local connection to stop (SIGTERM: a clean stop that records itself) and wait until
 * it has: the process is gone — its stop is recorded before it exits, and what it still does
 * after recording (its last log line, releasing its lock) must be over before the entry is
 * purged. A process whose stop is recorded but that has not exited by the deadline counts as
 * stopped. Returns the record it left.
 */
export async function stopConnection(stateDir: StateDir, r: ConsumerRecord, clock: Timers, waitMs: number): Promise<Result<ConsumerRecord | null>> {
  const ended = await stopAndWait(r.pid, { gone: () => isSameProcessAlive(r) === 'dead', budgetMs: waitMs, clock });
  if (ended.kind === 'not_signalled') return fail(`could not signal the background connection pid ${r.pid}: ${ended.message}`);
  // Read after the process is gone (or the wait ran out): a record read then is its last word.
  const now = stateDir.read('consumer');
  const mine = now.state === 'ok' && sameProcess(now.value, r) ? now.value : null;
  if (ended.kind === 'gone' || mine?.state === 'stopped') return ok(mine);
  return fail(
    `the background connection pid ${r.pid} on ${r.host} did not stop within ${Math.round(waitMs / 1000)} s of SIGTERM, so nothing was closed; ` +
      `it may be wedged — see ${stateDir.path('bridge.log')}, then run oh-hai session close again`,
  );
}
