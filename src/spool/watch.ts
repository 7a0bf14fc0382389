import { statSync, watch, type FSWatcher } from 'node:fs';
import path from 'node:path';
import { every, systemClock, type Timers } from '../util/clock.js';

export interface WatchOptions {
  /** The safety poll behind fs.watch, which can miss events (network filesystems, inotify limits). */
  pollMs?: number;
  /** The clock the safety poll runs on (default: the system clock). */
  clock?: Timers;
}

const DEFAULT_POLL_MS = 2000;

function signature(file: string): string {
  try {
    const s = statSync(file);
    return `${s.ino}:${s.size}:${s.mtimeMs}`;
  } catch {
    return 'absent';
  }
}

/**
 * Call onChange when any of `names` in `dir` may have changed. Watches the directory, not
 * the files: atomic replaces swap the inode and a file may not exist yet. No busy loop: a
 * slow poll compares inode, size and mtime in case an event was missed. Returns a disposer.
 */
export function watchFiles(dir: string, names: readonly string[], onChange: () => void, opts: WatchOptions = {}): () => void {
  const files = names.map((n) => path.join(dir, n));
  let seen = files.map(signature);
  let watcher: FSWatcher | null = null;
  let disposed = false;
  const fire = () => {
    if (!disposed) onChange();
  };
  try {
    watcher = watch(dir, { persistent: true }, (_event, filename) => {
      if (filename === null || names.includes(String(filename))) fire();
    });
    watcher.on('error', () => {
      watcher?.close();
      watcher = null;
    });
  } catch {
    watcher = null;
  }
  const stopPolling = every(opts.clock ?? systemClock, opts.pollMs ?? DEFAULT_POLL_MS, () => {
    const now = files.map(signature);
    if (now.some((s, i) => s !== seen[i])) {
      seen = now;
      fire();
    }
  });
  return () => {
    disposed = true;
    stopPolling();
    watcher?.close();
  };
}
