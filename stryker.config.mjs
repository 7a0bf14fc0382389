// Mutation testing of the durable path (issue 20): run by `node bench/mutation.mjs`, never by CI.
// Scope: verification, ingest, acks/acker/ack-pump, classify/rounds, the spool, ledger, cursor
// and line modules, the reader's printer and cursor writer. Survivors are listed, with why each
// is equivalent or harmless, in docs/reliability.md "Mutation testing".
export default {
  testRunner: 'vitest',
  vitest: { configFile: 'bench/mutation/vitest.config.ts' },
  coverageAnalysis: 'perTest',
  mutate: [
    'src/consumer/verify.ts',
    'src/consumer/ingest.ts',
    'src/consumer/acks.ts',
    'src/consumer/acker.ts',
    'src/consumer/ack-pump.ts',
    'src/consumer/classify.ts',
    'src/consumer/rounds.ts',
    'src/spool/append-log.ts',
    'src/spool/spool.ts',
    'src/spool/ledger.ts',
    'src/spool/cursor.ts',
    'src/spool/line.ts',
    'src/spool/seen-jti.ts',
    'src/reader/printer.ts',
    'src/reader/cursor-file.ts',
  ],
  // Two workers at most: the machine is shared (BRIEF.md).
  concurrency: 2,
  // A mutant that makes a loop endless times out (detected); the default 20 s wait per such
  // mutant would cost minutes on a shared machine.
  timeoutMS: 5_000,
  // Results of mutants whose code and covering tests are unchanged are reused from the last run
  // (bench/mutation.mjs --force runs every mutant again).
  incremental: true,
  incrementalFile: 'reports/mutation/stryker-incremental.json',
  ignorePatterns: ['dist', 'test-output', 'reports', '.stryker-tmp', 'test/integration', 'test/conformance', 'test/browser', 'test/docs', 'test/peer-hub'],
  reporters: ['clear-text', 'progress-append-only', 'json'],
  jsonReporter: { fileName: 'reports/mutation/mutation.json' },
  tempDirName: '.stryker-tmp',
  cleanTempDir: 'always',
};
