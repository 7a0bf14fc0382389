import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { afterAll, beforeAll } from 'vitest';
import os from 'node:os';
import path from 'node:path';
import { startHub, type TestHub } from './hub.js';
import { startBalancer, type Balancer } from './nginx.js';
import { freshDatabase } from './postgres.js';

/** Two Hub instances of one deployment on a fresh PostgreSQL database, behind the shipped nginx config. */
export interface Pair {
  db: Awaited<ReturnType<typeof freshDatabase>>;
  a: TestHub;
  b: TestHub;
  lb: Balancer;
  dispose(): Promise<void>;
}

/**
 * The second instance joins the account the first made, as an operator deploys it: the same
 * signing key and a copy of the human-token file (docs/deploy.md).
 */
export async function startPair(opts: { args?: string[]; env?: NodeJS.ProcessEnv } = {}): Promise<Pair> {
  const db = await freshDatabase();
  const common = { database: db.url, ...(opts.args ? { args: opts.args } : {}), ...(opts.env ? { env: opts.env } : {}) };
  const a = await startHub(common);
  const dirB = mkdtempSync(path.join(os.tmpdir(), 'oh-hai-hub-b-'));
  mkdirSync(path.join(dirB, 'data'), { mode: 0o700 });
  copyFileSync(path.join(a.dataDir, 'human-token'), path.join(dirB, 'data', 'human-token'));
  const b = await startHub({ ...common, signingKey: a.signingKey, dataDir: path.join(dirB, 'data') });
  const lb = await startBalancer([a.port, b.port]);
  return {
    db,
    a,
    b,
    lb,
    async dispose() {
      await lb.stop();
      await b.dispose();
      await a.dispose();
      await db.drop();
      rmSync(dirB, { recursive: true, force: true });
    },
  };
}

/**
 * Two instances on a fresh database for the tests of one describe (no balancer: each test talks to
 * the instance it means), started before them and stopped after; read them inside a test.
 */
export function twoInstances(
  args: string[],
  env: NodeJS.ProcessEnv = {},
): { a: () => TestHub; b: () => TestHub; db: () => Awaited<ReturnType<typeof freshDatabase>> } {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let a: TestHub, b: TestHub;
  beforeAll(async () => {
    db = await freshDatabase();
    a = await startHub({ database: db.url, args, env });
    b = await startHub({ database: db.url, args, env, signingKey: a.signingKey });
  });
  afterAll(async () => {
    await b?.dispose();
    await a?.dispose();
    await db?.drop();
  });
  return { a: () => a, b: () => b, db: () => db };
}
