import { postgresUnavailable, startCluster, TEST_DATABASE_URL, type Cluster } from './postgres.js';

/**
 * Global setup of the `postgres` test project: the cluster CI exported, or a throwaway one
 * started here and stopped after the run. Sets OH_HAI_TEST_DATABASE_URL for the workers.
 */
let cluster: Cluster | null = null;

export async function setup(): Promise<void> {
  if (process.env[TEST_DATABASE_URL]) return;
  const why = postgresUnavailable();
  if (why !== null) throw new Error(`the postgres test project cannot run: ${why}`);
  cluster = await startCluster();
  process.env[TEST_DATABASE_URL] = cluster.url;
}

export async function teardown(): Promise<void> {
  await cluster?.stop();
  cluster = null;
}
