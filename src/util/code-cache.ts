/**
 * The launcher (src/cli/launch.cts) keeps a V8 code cache of the bundle, written by a run's
 * first seconds; a run tells it here that the path a later run most wants compiled has just
 * run (a reader's wake and print, after a wait longer than those seconds), and the launcher
 * then writes the cache once more as the run exits. The key is the launcher's HOT_PATH_RAN
 * (test/unit/cli/launch.test.ts holds them equal). A no-op when no launcher started this run
 * (tsc's modules, a test) or its cache needs nothing more.
 */
export const HOT_PATH_RAN = Symbol.for('oh-hai.code-cache.hot-path-ran');

export function hotPathRan(): void {
  const tell = (globalThis as Record<symbol, unknown>)[HOT_PATH_RAN];
  if (typeof tell === 'function') tell();
}
