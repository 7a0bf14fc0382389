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

export const systemClock: Clock = {
  now: () => Date.now(),
  // hrtime rather than performance.now(): the first call of the latter loads perf_hooks (docs/performance.md).
  monotonic: () => Number(process.hrtime.bigint()) / 1e6,
};

/** A clock a unit test moves by hand. */
export function fakeClock(startMs = 0): Clock & { advance(ms: number): void; set(ms: number): void } {
  let t = startMs;
  let m = 0;
  return {
    now: () => t,
    monotonic: () => m,
    advance(ms: number) {
      t += ms;
      m += ms;
    },
    set(ms: number) {
      t = ms;
    },
  };
}
