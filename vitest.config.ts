import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { postgresUnavailable } from './test/helpers/postgres.js';

/**
 * The Hub's suite runs twice: on SQLite (the default project) and on PostgreSQL (the
 * `postgres` project: the same files with OH_HAI_TEST_HUB_STORE=postgres, plus the
 * cluster tests). Without PostgreSQL the second is left out and says why; on CI it must run.
 */
const HUB_ON_BOTH = ['test/integration/hub/*.test.ts', 'test/conformance/hub-wire.test.ts'];
/** About the SQLite file itself (group commit, the data-dir lock, the default store place). */
const SQLITE_ONLY = [
  'test/integration/hub/group-commit.test.ts',
  'test/integration/hub/sqlite-driver.test.ts',
  'test/integration/hub/admin.test.ts',
  'test/integration/hub/backlog-paging.test.ts',
  'test/integration/hub/canonical-bodies.test.ts',
  'test/integration/hub/statement-cost.test.ts',
];
const CLUSTER = ['test/integration/cluster/*.test.ts'];
/**
 * Unit files that `vi.mock` a module (node:fs): each needs a module registry of its own, so they
 * stay in the isolated forks with the integration tests. Every other unit file runs in the `unit`
 * project, whose threads share their workers: a worker and a module graph per file was most of
 * the unit tests' CPU (docs/node-lines.md, session 12).
 */
const MOCKS_MODULES = ['test/unit/consumer/durable-faults.test.ts', 'test/unit/spool/durable-faults.test.ts', 'test/unit/spool/cursor-writer-durable.test.ts'];

/**
 * Files that hold a worker for minutes, started before all others so the run does not end on one
 * of them with the other worker idle: with no timing cache (a clean clone, as on CI) vitest runs
 * larger files first, and these are among the smallest (the benches' tests are 30 lines).
 */
const LONGEST = ['test/docs/readme.test.ts', 'test/integration/reliability/soak.test.ts', 'test/integration/reliability/fuzz-consumer.test.ts'];
class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rank = (f: TestSpecification) => {
      const i = LONGEST.findIndex((l) => f.moduleId.endsWith(l));
      return i === -1 ? LONGEST.length : i;
    };
    // Array.prototype.sort is stable: the rest keep vitest's own order.
    return (await super.sort(files)).sort((a, b) => rank(a) - rank(b));
  }
}

const missing = postgresUnavailable();
if (missing !== null && process.env.CI !== 'true') console.log(`vitest: the PostgreSQL Hub tests are skipped: ${missing}`);

export default defineConfig({
  test: {
    pool: 'forks',
    // vitest 3.2 takes isolation per pool, not per project: the shared unit files get a pool of their own.
    poolOptions: { forks: { maxForks: 2, minForks: 1 }, threads: { isolate: false, maxThreads: 1, minThreads: 1 } },
    sequence: { sequencer: LongestFirst },
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // The JSON report lets .ci/run close with one plain "N passed, N failed" line.
    reporters: ['default', 'json'],
    outputFile: { json: 'test-output/vitest.json' },
    // Integration tests start real Hubs and real oh-hai processes; on a loaded 2-core
    // machine they need room, so files run in at most two workers and every wait is a
    // deadline inside the test, not a vitest timeout race.
    projects: [
      { extends: true, test: { name: 'unit', pool: 'threads', include: ['test/unit/**/*.test.ts'], exclude: [...MOCKS_MODULES, '**/node_modules/**'] } },
      {
        extends: true,
        test: { name: 'default', include: ['test/!(unit)/**/*.test.ts', ...MOCKS_MODULES], exclude: [...CLUSTER, '**/node_modules/**'] },
      },
      ...(missing === null || process.env.CI === 'true'
        ? [
            {
              extends: true as const,
              test: {
                name: 'postgres',
                include: [...HUB_ON_BOTH, ...CLUSTER],
                exclude: SQLITE_ONLY,
                env: { OH_HAI_TEST_HUB_STORE: 'postgres' },
                globalSetup: ['test/helpers/postgres-setup.ts'],
              },
            },
          ]
        : []),
    ],
  },
});
