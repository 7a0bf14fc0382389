import { readCursor, STATE_FILES, watchFiles, type WatchOptions } from '../spool/index.js';

/** The part of the ack pump the cursor watch drives (AckPump). */
export interface RoundPump {
  request(): void;
  settled(): Promise<void>;
}

/**
 * Ack rounds on the reader's cursor moves, with one wake of this process per round rather than
 * one per printed record. The reader steps cursor.json in place once per record, and every
 * step is an inotify event on the directory watched: a warm run printing 100 records woke the
 * connection 100 times, each time on the reader's CPU and ahead of it (docs/performance.md
 * "Warm bridge (session 23, warm23)": 3–11 ms of a loaded warm run). The pump already folds a
 * burst of requests into one more round, so the wakes bought nothing. Here a cursor event
 * closes the watch and asks for a round; the watch is opened again once the rounds settle,
 * with one more round if the cursor moved meanwhile. The cursor only moves forward (a rewind
 * is also a change), so a cursor equal to the one seen when the watch closed means the round,
 * which read it after that, saw every step. Acks stay what the cursor on disk passed: only
 * their rounds are fewer.
 */
export function watchCursorForRounds(dir: string, pump: RoundPump, opts: WatchOptions = {}): () => void {
  let unwatch: (() => void) | null = null;
  let disposed = false;
  const key = (): string => {
    const c = readCursor(dir);
    return `${c.seq}:${c.offset}`;
  };
  const moved = (): void => {
    if (unwatch === null) return;
    unwatch();
    unwatch = null;
    const seen = key();
    pump.request();
    void pump.settled().then(() => {
      if (disposed) return;
      arm();
      if (key() !== seen) pump.request();
    });
  };
  const arm = (): void => {
    unwatch = watchFiles(dir, [STATE_FILES.cursor], moved, opts);
  };
  arm();
  return () => {
    disposed = true;
    unwatch?.();
    unwatch = null;
  };
}
