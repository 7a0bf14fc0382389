import { defineConfig } from 'vitest/config';

// Stryker's test run: only the fast unit tests over the durable path (no real processes), so a
// mutant costs milliseconds. Integration tests stay in `npm test`; a scope file reached only by
// them gets its own unit tests instead (bench/mutation.mjs, docs/reliability.md "Mutation testing").
export default defineConfig({
  test: {
    include: ['test/unit/consumer/**/*.test.ts', 'test/unit/spool/**/*.test.ts', 'test/unit/bridge/printer.test.ts'],
    // bridge.log rotation is not on the durable path, and its test starts processes off dist/.
    exclude: ['test/unit/spool/log-rotation.test.ts'],
    // Worker threads, not forked processes: a fresh process per test file per mutant costs
    // seconds on a loaded machine. Isolated, because the fault tests mock node:fs per file.
    pool: 'threads',
    poolOptions: { threads: { maxThreads: 1, minThreads: 1 } },
    testTimeout: 30_000,
  },
});
