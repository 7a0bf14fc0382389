/**
 * Randomised crash tests take a seed: OH_HAI_CRASH_SEED=<n> repeats a run, and a failure
 * names the seed it ran with (`withSeed`).
 */

import { mulberry32 } from './prng.mjs';

export { mulberry32 };

/** The run's seed: OH_HAI_CRASH_SEED when set, else a fresh one. */
export const crashSeed = (): number => Number(process.env.OH_HAI_CRASH_SEED ?? Math.floor(Math.random() * 2 ** 31));

/** Run `body` with a PRNG from the seed; a failure is rethrown naming the seed and how to repeat it. */
export async function withSeed<T>(what: string, body: (rand: () => number, seed: number) => Promise<T>): Promise<T> {
  const seed = crashSeed();
  try {
    return await body(mulberry32(seed), seed);
  } catch (e) {
    throw new Error(`${what} failed with seed ${seed} (repeat it with OH_HAI_CRASH_SEED=${seed}): ${(e as Error).message}`, { cause: e });
  }
}
