// The seeded PRNG of the crash tests (mulberry32), in plain JavaScript so a test's child-process
// fixture (.mjs, run by node without a TypeScript step) draws from the same generator as the
// test that seeded it (test/helpers/seed.ts re-exports it).

/** The same seed gives the same sequence in [0, 1). */
export function mulberry32(seed) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
