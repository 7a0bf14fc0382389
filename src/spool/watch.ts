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

/** A watch's disposer, which can also rehearse the watch's event path (see `rehearse`). */
export interface Watching {
  (): void;
  /**
   * Run Node's event handler of this watch (`FSWatcher._handle.onchange`) on a name that is
   * not watched, as many times as V8 needs to give it and its caller feedback. A waiting
   * reader calls it before it sleeps: Node compiles that handler on its first event, which was
   * the wake's (~0.1 M instructions of ~0.48 M from wake to print, docs/performance.md "Push
   * latency from the commit (session 15…)"). Nothing is read and no callback fires. A Node
   * without that handler (it is Node's internal) only skips the rehearsal.
   */
  rehearse(): void;
}

/** What a rehearsed event names: no file of a state dir (watched names fire, others are ignored). */
const REHEARSAL_NAME = '.rehearsal';
/** V8 gives a function feedback (inline caches) from its 8th call; what runs fewer times stays generic. */
const REHEARSAL_EVENTS = 10;

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
 * slow poll compares inode, size and mtime in case an event was missed. Returns a disposer
 * (Watching: which also rehearses the event path).
 */
export function watchFiles(dir: string, names: readonly string[], onChange: () => void, opts: WatchOptions = {}): Watching {
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
  const dispose = (): void => {
    disposed = true;
    stopPolling();
    watcher?.close();
  };
  return Object.assign(dispose, {
    rehearse: () => {
      const handle = (watcher as unknown as { _handle?: { onchange?: unknown } } | null)?._handle;
      const onchange = handle?.onchange;
      if (typeof onchange !== 'function') return;
      for (let i = 0; i < REHEARSAL_EVENTS; i++) (onchange as (status: number, event: string, name: string) => void).call(handle, 0, 'change', REHEARSAL_NAME);
    },
  });
}
