import { defineConfig } from 'vitest/config';

// Integration tests start real Hubs and real oh-hai processes; on a loaded 2-core
// machine they need room, so files run in at most two workers and every wait is a
// deadline inside the test, not a vitest timeout race.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    pool: 'forks',
    poolOptions: { forks: { maxForks: 2, minForks: 1 } },
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // The JSON report lets .ci/run close with one plain "N passed, N failed" line.
    reporters: ['default', 'json'],
    outputFile: { json: 'test-output/vitest.json' },
  },
});
