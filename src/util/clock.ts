/**
 * The clock seam. Lease arithmetic and staleness are measured on our own clock; Hub
 * instants are never subtracted from it (product doc: "The lease epilogue").
 */
export interface Clock {
  /** Wall-clock milliseconds since the epoch (our clock). */
  now(): number;
  /** Monotonic milliseconds, for measuring intervals inside one process. */
  monotonic(): number;
}

/**
 * A clock with timers: every wait in the consumer, the reader and the commands goes through
 * `sleep` or `setTimer`, so a unit test moves time by hand (`fakeClock`) instead of
 * shortening intervals through knobs. (The reference Hub only reads a Clock.)
 */
export interface Timers extends Clock {
  /** Resolves after `ms` (at once for ms ≤ 0), or as soon as `signal` aborts; never rejects. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  /** Calls `fn` once after `ms`; the returned function cancels it (a no-op once fired). */
  setTimer(ms: number, fn: () => void): () => void;
}

/** setTimeout takes at most 2^31 - 1 ms (~24.8 days); a longer delay fires there. */
const MAX_TIMER_MS = 2 ** 31 - 1;

function systemSleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted || !(ms > 0)) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, Math.min(ms, MAX_TIMER_MS));
    signal?.addEventListener('abort', done, { once: true });
  });
}

export const systemClock: Timers = {
  now: () => Date.now(),
  // hrtime rather than performance.now(): the first call of the latter loads perf_hooks (docs/performance.md).
  monotonic: () => Number(process.hrtime.bigint()) / 1e6,
  sleep: systemSleep,
  setTimer(ms, fn) {
    const t = setTimeout(fn, Math.min(Math.max(0, ms), MAX_TIMER_MS));
    return () => clearTimeout(t);
  },
};

/**
 * Calls `fn` every `ms` on `clock` until the returned function is called: a repeating timer
 * built from `setTimer`, so a fake clock drives it like any other wait.
 */
export function every(clock: Timers, ms: number, fn: () => void): () => void {
  let cancel: () => void = () => undefined;
  let stopped = false;
  const arm = (): void => {
    cancel = clock.setTimer(ms, () => {
      if (stopped) return;
      arm();
      fn();
    });
  };
  arm();
  return () => {
    stopped = true;
    cancel();
  };
}

export interface FakeClock extends Timers {
  /** Move both clocks forward, firing every timer and sleep due by then, in due order. */
  advance(ms: number): void;
  /** Set the wall clock (the monotonic one never goes back). */
  set(ms: number): void;
  /** Timers and sleeps not yet fired. */
  pending(): number;
  /** Every sleep asked for so far, in ms, in order (what a backoff decided). */
  readonly slept: number[];
  /** Resolves once something waits on this clock (a sleep or a timer is pending). */
  waiting(): Promise<void>;
}

/** A clock a unit test moves by hand: timers and sleeps fire only when `advance` passes them. */
export function fakeClock(startMs = 0): FakeClock {
  let t = startMs;
  let m = 0;
  let nextId = 0;
  const timers = new Map<number, { at: number; fn: () => void }>();
  const slept: number[] = [];
  const onWait: (() => void)[] = [];
  const add = (ms: number, fn: () => void): (() => void) => {
    const id = nextId++;
    timers.set(id, { at: m + Math.max(0, ms), fn });
    for (const w of onWait.splice(0)) w();
    return () => timers.delete(id);
  };
  const clock: FakeClock = {
    now: () => t,
    monotonic: () => m,
    sleep(ms, signal) {
      slept.push(ms);
      if (signal?.aborted || !(ms > 0)) return Promise.resolve();
      return new Promise((resolve) => {
        const done = () => {
          cancel();
          signal?.removeEventListener('abort', done);
          resolve();
        };
        const cancel = add(ms, done);
        signal?.addEventListener('abort', done, { once: true });
      });
    },
    setTimer: add,
    advance(ms: number) {
      const end = m + ms;
      for (;;) {
        let due: [number, { at: number; fn: () => void }] | null = null;
        for (const entry of timers) if (entry[1].at <= end && (due === null || entry[1].at < due[1].at)) due = entry;
        if (due === null) break;
        timers.delete(due[0]);
        t += due[1].at - m;
        m = due[1].at;
        due[1].fn();
      }
      t += end - m;
      m = end;
    },
    set(ms: number) {
      t = ms;
    },
    pending: () => timers.size,
    slept,
    waiting: () => (timers.size > 0 ? Promise.resolve() : new Promise<void>((r) => onWait.push(r))),
  };
  return clock;
}
