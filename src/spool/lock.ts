import fs, { statSync } from 'node:fs';
import path from 'node:path';
import { systemClock, type Clock } from '../util/clock.js';

/** A lock this process holds. */
export interface HeldLock {
  path: string;
  /**
   * False once the lock is compromised: proper-lockfile reported it, the lock directory
   * is gone or is another one (taken over), or its mtime is older than `staleMs` — the
   * point past which another process may take it, e.g. after we were stopped (SIGSTOP)
   * or starved. One stat: call it before every append and ack; false is fatal.
   */
  check(): boolean;
  release(): Promise<void>;
}

export type LockResult =
  { ok: true; lock: HeldLock } | { ok: false; code: 'held'; holder: string; reason: string } | { ok: false; code: 'error'; reason: string };

export interface LockOptions {
  /** Heartbeat age past which the lock counts as abandoned (proper-lockfile clamps to ≥ 2000). */
  staleMs: number;
  onCompromised: (err: Error) => void;
  clock?: Clock;
}

/** An fs for proper-lockfile's unlock that forgets the lock without removing the directory. */
// Built on use: spreading node:fs reads its lazy getters (ReadStream, promises), which load
// streams and readline into every run that merely imports this module (docs/performance.md).
const keepDirectory = () => ({ ...fs, rmdir: (_p: string, cb: (err: null) => void) => cb(null) });

/**
 * An fs for proper-lockfile's lock whose lock directory is created 0700 (it calls
 * mkdir(path, cb), which under the usual umask 022 gives 0755): the state dir is
 * private all the way down (test/integration/bridge/privacy.test.ts).
 */
const privateDirectory = () => ({ ...fs, mkdir: (p: string, cb: (err: NodeJS.ErrnoException | null) => void) => fs.mkdir(p, { mode: 0o700 }, cb) });

interface Identity {
  ino: number;
  birth: number;
}

function identityOf(p: string): (Identity & { mtimeMs: number }) | null {
  try {
    const s = statSync(p);
    return { ino: s.ino, birth: s.birthtimeMs, mtimeMs: s.mtimeMs };
  } catch {
    return null;
  }
}

/** Take `<dir>/<name>` (a proper-lockfile lock directory) without following symlinks (realpath: false). */
export async function acquireLock(dir: string, name: string, opts: LockOptions): Promise<LockResult> {
  const lockPath = path.join(dir, name);
  const clock = opts.clock ?? systemClock;
  const staleMs = Math.max(opts.staleMs, 2000);
  let compromised = false;
  let released = false;
  let unlock: () => Promise<void>;
  // Loaded on first use: only the consumer locks, and the reader imports this module through
  // the spool's index; proper-lockfile is the costliest import of its warm path.
  const { default: lockfile } = await import('proper-lockfile');
  try {
    unlock = await lockfile.lock(lockPath, {
      lockfilePath: lockPath,
      realpath: false,
      fs: privateDirectory(),
      stale: staleMs,
      retries: 0,
      onCompromised: (err: Error) => {
        compromised = true;
        opts.onCompromised(err);
      },
    });
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    if (err.code === 'ELOCKED') {
      return { ok: false, code: 'held', holder: lockPath, reason: `${lockPath} is held by another live process (its lock is fresher than ${staleMs} ms)` };
    }
    return { ok: false, code: 'error', reason: `cannot take the lock ${lockPath}: ${err.message}` };
  }
  const mine = identityOf(lockPath);
  const check = (): boolean => {
    if (compromised || released || mine === null) return false;
    const now = identityOf(lockPath);
    if (now === null || now.ino !== mine.ino || now.birth !== mine.birth || clock.now() - now.mtimeMs > staleMs) {
      compromised = true;
      return false;
    }
    return true;
  };
  return {
    ok: true,
    lock: {
      path: lockPath,
      check,
      release: async () => {
        if (released) return;
        const takenOver = !check();
        released = true;
        try {
          // A lock we no longer own may be another process's now: stop our updates but leave its directory alone.
          if (takenOver) await lockfile.unlock(lockPath, { realpath: false, lockfilePath: lockPath, fs: keepDirectory() });
          else await unlock();
        } catch {
          // proper-lockfile already dropped it (it reported the compromise): nothing of ours is left
        }
      },
    },
  };
}
