import { isSameProcessAlive, sameProcess, STATE_FILES, type ConsumerRecord, type ConsumerRetrying, type ProcessStamp, type StateDir } from '../spool/index.js';
import { formatDuration } from '../util/duration.js';

export type ConsumerEnd = { kind: 'stopped'; record: ConsumerRecord } | { kind: 'died'; pid: number };

/** Where a waiting reader says that its connection lost the Hub, and found it again (its stderr, prefixed). */
export interface RetryNotice {
  say(line: string): void;
  /** Our clock, ms. */
  now(): number;
}

/**
 * Whether the background connection this run relies on has ended. A record present when
 * this run started a new connection (`baseline`: a stopped or dead predecessor) is not
 * news; the connection this run spawned may not have written its record yet.
 *
 * Read on every wake of the wait, so it is also where a waiting run notices the connection
 * retrying the Hub (`notice`): one line when the retries start, one when it is connected
 * again — never one per attempt (bridge.log has those).
 */
export class ConsumerWatch {
  /** The retry state this run last said the connection was in; null while it has said nothing or it reconnected. */
  private told: ConsumerRetrying | null = null;

  constructor(
    private readonly stateDir: StateDir,
    private readonly baseline: ConsumerRecord | null,
    private readonly spawned: ProcessStamp | null,
    private readonly notice: RetryNotice | null = null,
  ) {}

  private current(): ConsumerRecord | null {
    const rec = this.stateDir.read('consumer');
    if (rec.state !== 'ok') return null;
    return this.baseline && sameProcess(rec.value, this.baseline) ? null : rec.value;
  }

  ended(): ConsumerEnd | null {
    const rec = this.current();
    if (rec) {
      if (rec.state === 'stopped') return { kind: 'stopped', record: rec };
      if (isSameProcessAlive(rec) === 'dead') return { kind: 'died', pid: rec.pid };
      this.noteRetries(rec);
      return null;
    }
    if (this.spawned === null || isSameProcessAlive(this.spawned) !== 'dead') return null;
    // It may have recorded its stop just before it exited: read once more now that it is gone.
    const last = this.current();
    if (last?.state === 'stopped') return { kind: 'stopped', record: last };
    if (last && isSameProcessAlive(last) !== 'dead') return null;
    return { kind: 'died', pid: this.spawned.pid };
  }

  private noteRetries(rec: ConsumerRecord): void {
    const n = this.notice;
    if (n === null) return;
    const r = rec.retrying ?? null;
    if (r !== null) {
      if (this.told === null) n.say(retryingLine(r, n.now(), this.stateDir.path(STATE_FILES.log)));
      this.told = r;
    } else if (this.told !== null) {
      n.say(reconnectedLine(this.told, n.now()));
      this.told = null;
    }
  }
}

const attempts = (n: number): string => `${n} failed attempt${n === 1 ? '' : 's'}`;

function retryingLine(r: ConsumerRetrying, nowMs: number, logPath: string): string {
  // A run that adopts a connection already deep in its retries says for how long.
  const since = r.since !== null && r.attempt > 1 ? `, failing since ${formatDuration(nowMs - r.since)} ago` : '';
  return (
    `the background connection cannot reach the Hub (${r.reason ?? 'no reason recorded'}). It is retrying with backoff ` +
    `(attempt ${r.attempt} of ${r.of}${since}) and this run keeps waiting; if all ${r.of} fail it stops and this run exits 13. ` +
    `Nothing is lost: unacknowledged mail stays at the Hub. Every attempt is in ${logPath}`
  );
}

/** How long the connection has been failing, from a second on (a shorter span reads as noise). */
const failingFor = (r: ConsumerRetrying, nowMs: number): string | null =>
  r.since !== null && nowMs - r.since >= 1000 ? formatDuration(nowMs - r.since) : null;

function reconnectedLine(last: ConsumerRetrying, nowMs: number): string {
  const span = failingFor(last, nowMs);
  const over = span !== null ? ` over ${span}` : '';
  return `the background connection reached the Hub again (after ${attempts(last.attempt)}${over}); waiting for mail`;
}

/** A retrying connection's state for an epilogue: the last failure, the attempt, and for how long (from a second on). */
export function retryState(r: ConsumerRetrying, nowMs: number): string {
  const span = failingFor(r, nowMs);
  const since = span !== null ? `, failing since ${span} ago` : '';
  return `${r.reason ?? 'no reason recorded'} (attempt ${r.attempt} of ${r.of}${since})`;
}
