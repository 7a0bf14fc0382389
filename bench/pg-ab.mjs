// Shared by the PostgreSQL A/B benches (connect-cost, pg-send-cost): each checkout's Hub on a
// database of its own in ONE PostgreSQL, its process's CPU, its database backends' CPU and its own
// per-work round-trip counter, so two builds are compared in the same run on the same machine load.
// PostgreSQL: OH_HAI_BENCH_DATABASE_URL (an admin URL), else the bench runs itself again inside a
// throwaway cluster from .ci/postgres.sh. Never run by CI.
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { hubReady, root } from './bridge-world.mjs';

/**
 * The admin URL, or null once `script` (bench/<name>.mjs) has run again inside a throwaway cluster
 * with this process's arguments: the caller then exits with `ranInCluster.status`.
 */
export function adminUrlOrRerun(script) {
  const admin = process.env.OH_HAI_BENCH_DATABASE_URL;
  if (admin) return admin;
  // The cluster is stopped and removed when this shell exits.
  const text = `source .ci/postgres.sh >&2 && OH_HAI_BENCH_DATABASE_URL="$OH_HAI_TEST_DATABASE_URL" node ${script} "$@"`;
  const r = spawnSync('bash', ['-c', text, 'bench', ...process.argv.slice(2)], { cwd: root, stdio: 'inherit' });
  process.exit(r.status ?? 1);
}

export const opt = (name, dflt) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : dflt;
};

/**
 * This checkout, and `--against <other checkout>` when given. `--unix this|against|both`: that Hub
 * reaches PostgreSQL over its Unix socket (`unix`), not TCP on loopback; `--unix this` or `against`
 * without `--against` compares this checkout with itself over the two.
 */
export const checkoutsToCompare = () => {
  const unix = opt('unix', 'none');
  if (!['none', 'this', 'against', 'both'].includes(unix)) throw new Error('--unix: this, against or both');
  const against = opt('against', unix === 'this' || unix === 'against' ? root : null);
  return [
    { label: 'this', dir: root, unix: unix === 'this' || unix === 'both' },
    ...(against === null ? [] : [{ label: 'against', dir: path.resolve(against), unix: unix === 'against' || unix === 'both' }]),
  ];
};

const TICKS = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;

/** A process's CPU so far (utime + stime), in seconds. */
export const cpuOf = (pid) => {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(f[11]) + Number(f[12])) / TICKS;
};

/** `call(base, method, path, token, body?)`: the parsed JSON, or a throw naming the status; `agent` keeps connections. */
export function call(base, method, p, token, body, agent) {
  return new Promise((resolve, reject) => {
    const req = request(base + p, { method, agent, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' } }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (d) => (text += d));
      res.on('error', reject);
      res.on('end', () => (res.statusCode >= 400 ? reject(new Error(`${method} ${p} ${res.statusCode} ${text}`)) : resolve(JSON.parse(text))));
    });
    req.on('error', reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

/** The run's own statements (databases made and dropped, backends looked up) through one pooled connection. */
export async function adminOf(admin) {
  const { default: pg } = await import('pg');
  const pool = new pg.Pool({ connectionString: admin, max: 1 });
  const query = async (text) => (await pool.query(text)).rows;

  /** A Hub of `dir` on a fresh database, started with `args` and `env` beside its own; `unix`: over PostgreSQL's (first) Unix socket directory. */
  async function startHub(dir, { args = [], env = {}, unix = false, nodeFlags = [] } = {}) {
    const db = `oh_hai_ab_${randomBytes(4).toString('hex')}`;
    await query(`CREATE DATABASE ${db}`);
    const url = new URL(admin);
    url.pathname = `/${db}`;
    if (unix) url.searchParams.set('host', (await query('SHOW unix_socket_directories'))[0].unix_socket_directories.split(',')[0].trim());
    const data = mkdtempSync(path.join(os.tmpdir(), 'oh-hai-bench-ab-'));
    const proc = spawn(
      process.execPath,
      [...nodeFlags, path.join(dir, 'bin', 'oh-hai'), 'hub', 'serve', '--port', '0', '--data', data, '--admin-listen', '127.0.0.1:0', ...args],
      { env: { ...process.env, OH_HAI_HUB_DATABASE_URL: url.toString(), ...env }, stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let out = '';
    proc.stdout.on('data', (d) => (out += d));
    const base = await hubReady(proc);
    return {
      db,
      proc,
      base,
      adminUrl: /^hub: admin \(healthz, readyz, metrics\) at (\S+)$/m.exec(out)?.[1],
      human: readFileSync(path.join(data, 'human-token'), 'utf8').trim(),
      async stop() {
        proc.kill('SIGTERM');
        await new Promise((r) => proc.once('exit', r));
        rmSync(data, { recursive: true, force: true });
        await query(`DROP DATABASE ${db}`);
      },
    };
  }

  /** The CPU so far, in seconds, of the database's backends serving `hub` (its pool is opened at start and kept). */
  async function databaseCpuOf(hub) {
    let total = 0;
    for (const { pid } of await query(`SELECT pid FROM pg_stat_activity WHERE datname = '${hub.db}'`)) {
      try {
        total += cpuOf(pid);
      } catch {
        // Gone meanwhile.
      }
    }
    return total;
  }

  return { query, startHub, databaseCpuOf, end: () => pool.end() };
}

/** Round trips so far of the works named (a route pattern, `push`, …), from the Hub's /metrics. */
export async function tripsOf(hub, works) {
  const text = await (await fetch(`${hub.adminUrl}/metrics`)).text();
  let n = 0;
  for (const m of text.matchAll(/^oh_hai_hub_db_round_trips_total\{work="([^"]+)",kind="(?:unit|read)"\} (\d+)$/gm))
    if (works.includes(m[1])) n += Number(m[2]);
  return n;
}
