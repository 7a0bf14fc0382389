import { existsSync, readFileSync } from 'node:fs';
import type { Timers } from '../util/clock.js';
import type { ProcessStamp } from './records.js';

/**
 * Process liveness that survives zombies and recycled pids. kill(pid, 0) succeeds on both,
 * so a process counts as the one a record names only if it is not a zombie AND its start
 * time matches the one recorded. Linux reads /proc; macOS asks ps; elsewhere we know less.
 */

const isLinux = process.platform === 'linux';
const hasPs = process.platform === 'darwin' || process.platform === 'freebsd' || process.platform === 'openbsd';

function procStatFields(pid: number): string[] | null {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  // comm (field 2) is in parentheses and may itself contain spaces and ')': split after the last ')'.
  const close = text.lastIndexOf(')');
  if (close === -1) return null;
  // fields[0] is field 3 (state), so field n is fields[n - 3]
  return text
    .slice(close + 2)
    .trim()
    .split(' ');
}

function ps(pid: number, columns: string): string | null {
  try {
    // Required on use: only macOS and the BSDs ask ps, and node:child_process costs every other run its load.
    const { execFileSync } = process.getBuiltinModule('node:child_process');
    const out = execFileSync('ps', ['-o', columns, '-p', String(pid)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    const line = out.trim();
    return line === '' ? null : line;
  } catch {
    return null;
  }
}

const validPid = (pid: number): boolean => Number.isSafeInteger(pid) && pid > 0;

/**
 * Whether /proc lists every process to us: it shows pid 1 (which is root's, so a hidepid mount
 * would hide it from anyone it hides anything from). Then a pid without a /proc entry is gone
 * and needs no kill(pid, 0): the ESRCH it throws is the first errno exception of a bridge run,
 * and building it costs a warm run 0.6 M (Node 24) to 1.4 M (Node 20) instructions (docs/performance.md "Warm bridge (session 11)").
 */
let showsAll: boolean | null = null;
const procShowsAll = (): boolean => (showsAll ??= existsSync('/proc/1'));

/** kill(pid, 0): EPERM means it exists under another user. Existence only — a zombie passes too. */
function signalProbe(pid: number): 'exists' | 'gone' | 'unknown' {
  try {
    process.kill(pid, 0);
    return 'exists';
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'EPERM') return 'exists';
    return code === 'ESRCH' ? 'gone' : 'unknown';
  }
}

/** The process's start time: /proc/<pid>/stat field 22 (ticks since boot), `ps -o lstart=` on macOS, else null. */
export function processStartTime(pid: number): string | null {
  if (!validPid(pid)) return null;
  if (isLinux) return procStatFields(pid)?.[22 - 3] ?? null;
  if (hasPs) return ps(pid, 'lstart=')?.replace(/\s+/g, ' ') ?? null;
  return null;
}

export type ProcessState = 'running' | 'zombie' | 'gone' | 'unknown';

/** Whether a pid is a running process. A zombie has exited: it is not running whatever kill(pid, 0) says. */
export function processState(pid: number): ProcessState {
  if (!validPid(pid)) return 'gone';
  if (isLinux) {
    const fields = procStatFields(pid);
    // no /proc entry: gone, unless /proc hides other users' processes (hidepid) and it exists
    if (!fields) return (procShowsAll() && !existsSync(`/proc/${pid}`)) || signalProbe(pid) !== 'exists' ? 'gone' : 'unknown';
    const state = fields[0];
    return state === 'Z' || state === 'X' || state === 'x' ? 'zombie' : 'running';
  }
  const probe = signalProbe(pid);
  if (probe !== 'exists') return probe;
  if (!hasPs) return 'running';
  const stat = ps(pid, 'stat=');
  if (stat === null) return 'gone';
  return stat.startsWith('Z') ? 'zombie' : 'running';
}

const exited = (state: ProcessState): boolean => state === 'gone' || state === 'zombie';

/** The pid has exited (gone, or a zombie awaiting its parent); 'unknown' — hidden from us — is not. */
export const processExited = (pid: number): boolean => exited(processState(pid));

/**
 * os.hostname(): uname's nodename. On Linux the same name is /proc/sys/kernel/hostname (both
 * read the process's UTS namespace), and reading it keeps node:os — ~0.9 M instructions to
 * load — off the bridge's warm path. Read on every call, as before: a long-running
 * connection sees a renamed host.
 */
export function hostName(): string {
  if (isLinux) {
    try {
      const name = readFileSync('/proc/sys/kernel/hostname', 'utf8');
      if (name.endsWith('\n')) return name.slice(0, -1);
    } catch {
      // no /proc: ask the OS below
    }
  }
  return process.getBuiltinModule('node:os').hostname();
}

export function stampOf(pid: number): ProcessStamp {
  return { pid, host: hostName(), start_time: processStartTime(pid) };
}

export const selfStamp = (pid: number = process.pid): ProcessStamp => stampOf(pid);

/** The same process: pid, host AND start time (a reused pid is another process). */
export const sameProcess = (a: ProcessStamp, b: ProcessStamp): boolean => a.pid === b.pid && a.host === b.host && a.start_time === b.start_time;

/** Whether a stamped process still runs: the one answer every judge of a record uses. */
export type Liveness = 'alive' | 'dead' | 'unknown';

/**
 * Is the process a record names still that process? 'unknown' when it cannot be told from
 * here: another host (pids are host-local; only a heartbeat can age it out), or a live
 * pid whose start time cannot be read to compare.
 */
export function isSameProcessAlive(stamp: ProcessStamp): Liveness {
  if (stamp.host !== hostName()) return 'unknown';
  const state = processState(stamp.pid);
  if (exited(state)) return 'dead';
  if (state === 'unknown') return 'unknown';
  const now = processStartTime(stamp.pid);
  if (stamp.start_time === null) return now === null ? 'alive' : 'unknown';
  if (now === null) return 'unknown';
  return now === stamp.start_time ? 'alive' : 'dead';
}

/** The parent pid, or null when the process cannot be read. */
export function parentPid(pid: number): number | null {
  if (!validPid(pid)) return null;
  const raw = isLinux ? procStatFields(pid)?.[4 - 3] : ps(pid, 'ppid=');
  if (raw === undefined || raw === null) return null;
  const n = Number(raw.trim());
  return Number.isSafeInteger(n) && n >= 0 ? n : null;
}

/**
 * The command line of a process (argv joined by spaces; a program that sets its title,
 * like npm, shows that), falling back to its comm; null when it cannot be read.
 */
export function processCommand(pid: number): string | null {
  if (!validPid(pid)) return null;
  if (isLinux) {
    try {
      const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8')
        .split('\0')
        .filter((a) => a !== '');
      if (argv.length > 0) return argv.join(' ');
    } catch {
      return null;
    }
    try {
      return readFileSync(`/proc/${pid}/comm`, 'utf8').trim() || null;
    } catch {
      return null;
    }
  }
  return hasPs ? (ps(pid, 'command=') ?? ps(pid, 'comm=')) : null;
}

/** How a stopAndWait ended: the process went, outlived the budget, or could not be signalled (EPERM: another user's). */
export type StopAndWait = { kind: 'gone' } | { kind: 'timeout' } | { kind: 'cancelled' } | { kind: 'not_signalled'; code: string; message: string };

export interface StopAndWaitOptions {
  /** Whether the process is gone — judged by the caller (by start time, by what runs under the pid). */
  gone(): boolean;
  budgetMs: number;
  clock: Timers;
  /** Stops the wait early (the waiter itself was asked to stop). */
  signal?: AbortSignal;
  /** The first poll interval; each later one is half as long again, up to STOP_POLL_MAX_MS. */
  firstPollMs?: number;
}

const STOP_POLL_MAX_MS = 200;

/**
 * SIGTERM `pid` (a clean stop for every oh-hai process), then poll `gone` until it is true,
 * the budget runs out or `signal` aborts. The poll starts short (a clean stop is quick) and
 * backs off. What to do on a timeout is the caller's documented fallback: a reader displacing
 * another carries on and claims again, adoption of a 0.9 home refuses (exit 10), `session
 * close` accepts a process that recorded its stop.
 */
export async function stopAndWait(pid: number, o: StopAndWaitOptions): Promise<StopAndWait> {
  try {
    process.kill(pid, 'SIGTERM');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code ?? 'unknown';
    if (code === 'ESRCH') return { kind: 'gone' };
    return { kind: 'not_signalled', code, message: (e as Error).message };
  }
  const deadline = o.clock.monotonic() + o.budgetMs;
  let pollMs = o.firstPollMs ?? 10;
  for (;;) {
    if (o.gone()) return { kind: 'gone' };
    if (o.signal?.aborted) return { kind: 'cancelled' };
    const left = deadline - o.clock.monotonic();
    if (left <= 0) return { kind: 'timeout' };
    await o.clock.sleep(Math.min(pollMs, left), o.signal);
    pollMs = Math.min(STOP_POLL_MAX_MS, pollMs * 1.5);
  }
}
