import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { reservePort } from './ports.js';

/**
 * PostgreSQL for the tests: the cluster CI started (OH_HAI_TEST_DATABASE_URL), or a
 * throwaway one this helper starts in a temp dir on a free loopback port and removes.
 * Each Hub under test gets a database of its own on it.
 */

/** The environment variable naming an admin URL of a running cluster (CI sets it). */
export const TEST_DATABASE_URL = 'OH_HAI_TEST_DATABASE_URL';

/** Debian's binaries first (postgresql-NN), then PATH. */
export function findPostgresBin(): string | null {
  const debian = '/usr/lib/postgresql';
  if (existsSync(debian)) {
    const versions = readdirSync(debian)
      .filter((v) => existsSync(path.join(debian, v, 'bin', 'initdb')))
      .sort((a, b) => Number(b) - Number(a));
    if (versions.length > 0) return path.join(debian, versions[0]!, 'bin');
  }
  const which = spawnSync('sh', ['-c', 'command -v initdb'], { encoding: 'utf8' });
  return which.status === 0 && which.stdout.trim() !== '' ? path.dirname(which.stdout.trim()) : null;
}

/** Why PostgreSQL tests cannot run here, or null when they can. */
export function postgresUnavailable(): string | null {
  if (process.env[TEST_DATABASE_URL]) return null;
  return findPostgresBin() === null ? `no ${TEST_DATABASE_URL} and no initdb (install Debian's postgresql package)` : null;
}

export interface Cluster {
  /** Admin URL (with its password): create and drop databases with it. */
  url: string;
  stop(): Promise<void>;
}

/** initdb refuses root: run the server as an unprivileged user then. */
function asUser(): { uid: number; gid: number } | null {
  if (process.getuid?.() !== 0) return null;
  for (const name of ['postgres', 'nobody']) {
    const r = spawnSync('id', ['-u', name], { encoding: 'utf8' });
    const g = spawnSync('id', ['-g', name], { encoding: 'utf8' });
    if (r.status === 0 && g.status === 0) return { uid: Number(r.stdout.trim()), gid: Number(g.stdout.trim()) };
  }
  throw new Error('running as root, and there is neither a postgres nor a nobody user to run a throwaway PostgreSQL as');
}

/** A throwaway cluster: password auth on loopback only, fsync off (the tests kill Hubs, not the database). */
export async function startCluster(): Promise<Cluster> {
  const bin = findPostgresBin();
  if (bin === null) throw new Error('initdb not found: install PostgreSQL (Debian: apt-get install postgresql)');
  const dir = mkdtempSync(path.join(os.tmpdir(), 'oh-hai-pg-'));
  const data = path.join(dir, 'data');
  const password = randomBytes(12).toString('hex');
  const pwfile = path.join(dir, 'pw');
  writeFileSync(pwfile, password + '\n', { mode: 0o600 });
  const user = asUser();
  if (user) {
    chownSync(dir, user.uid, user.gid);
    chownSync(pwfile, user.uid, user.gid);
  }
  chmodSync(dir, 0o700);
  const ids = user ? { uid: user.uid, gid: user.gid } : {};
  const init = spawnSync(path.join(bin, 'initdb'), ['-D', data, '-U', 'oh_hai', '--auth=scram-sha-256', `--pwfile=${pwfile}`, '-E', 'UTF8', '--no-sync'], {
    encoding: 'utf8',
    ...ids,
  });
  if (init.status !== 0) throw new Error(`initdb failed: ${init.stderr}`);
  // Reserved until stop(): no listen(0) or connect() elsewhere takes it before the server listens.
  const reserved = await reservePort();
  const port = reserved.port;
  let out = '';
  const proc: ChildProcess = spawn(
    path.join(bin, 'postgres'),
    ['-D', data, '-k', dir, '-h', '127.0.0.1', '-p', String(port), '-c', 'fsync=off', '-c', 'full_page_writes=off', '-c', 'max_connections=300'],
    { stdio: ['ignore', 'pipe', 'pipe'], ...ids },
  );
  proc.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  proc.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  const url = `postgres://oh_hai:${password}@127.0.0.1:${port}/postgres`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    const c = new pg.Client({ connectionString: url });
    try {
      await c.connect();
      await c.end();
      break;
    } catch (e) {
      await c.end().catch(() => {});
      if (proc.exitCode !== null || Date.now() > deadline) {
        proc.kill('SIGKILL');
        reserved.release();
        rmSync(dir, { recursive: true, force: true });
        throw new Error(`the throwaway PostgreSQL did not start: ${(e as Error).message}\n${out}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return {
    url,
    async stop() {
      if (proc.exitCode === null) {
        const exited = new Promise((r) => proc.once('exit', r));
        // SIGINT is PostgreSQL's fast shutdown: sessions are ended, nothing waits.
        proc.kill('SIGINT');
        await exited;
      }
      reserved.release();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The cluster's admin URL with another database name. */
export function withDatabase(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

async function admin<T>(fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const url = process.env[TEST_DATABASE_URL];
  if (!url) throw new Error(`${TEST_DATABASE_URL} is not set: the postgres test project's global setup sets it`);
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

/** A fresh database on the test cluster; `drop` removes it (ending any session still on it). */
export async function freshDatabase(): Promise<{ url: string; name: string; drop(): Promise<void> }> {
  const name = `oh_hai_${randomBytes(6).toString('hex')}`;
  await admin((c) => c.query(`CREATE DATABASE ${name}`));
  return {
    url: withDatabase(process.env[TEST_DATABASE_URL]!, name),
    name,
    drop: () => admin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(() => undefined),
  };
}

/** One statement on a database of the test cluster. */
export async function sql<T extends pg.QueryResultRow>(url: string, text: string, params: unknown[] = []): Promise<T[]> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query<T>(text, params)).rows;
  } finally {
    await c.end();
  }
}
