import type { Parameters } from 'fast-check';

/**
 * How a property runs. In CI: a fixed seed per property and its own small run count, so
 * a failure reproduces exactly. `FUZZ_RUNS=<n>` runs n cases instead (long runs by hand);
 * `FUZZ_SEED=<n>` replays another seed (fast-check's failure report prints the seed, the
 * path and the shrunk counterexample: pass the seed back to reproduce it). Test-only knobs,
 * listed in docs/internals.md and docs/reliability.md.
 */
export function fuzzParameters<T>(seed: number, ciRuns: number): Parameters<T> {
  const runs = positiveInt('FUZZ_RUNS') ?? ciRuns;
  return { seed: positiveInt('FUZZ_SEED') ?? seed, numRuns: runs, endOnFailure: false, verbose: 1 };
}

function positiveInt(name: string): number | null {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return null;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < 0) throw new Error(`${name} must be a non-negative integer, got ${JSON.stringify(raw)}`);
  return n;
}
