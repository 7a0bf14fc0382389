// What ONE stream connect costs a PostgreSQL Hub, this checkout against another in the same run:
// both Hubs (each on a database of its own in one PostgreSQL) hold S streams with a short hold
// bound at the same time, every stream reconnecting over its kept connection as soon as it is told
// to, so both see the same machine load; then each Hub's CPU per connect (its process's utime +
// stime: on loopback its sockets' TCP work is charged to it), the database round trips per connect
// (its own per-work counter, the first page included) and the ratio, over the same window.
// Needs `npm run build` in both checkouts. PostgreSQL: OH_HAI_BENCH_DATABASE_URL (an admin URL),
// else a throwaway cluster from .ci/postgres.sh. Never run by CI.
// Usage: node bench/connect-cost.mjs [--against <other checkout>] [--streams 150] [--hold 1] [--seconds 20]
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { hubReady } from './bridge-world.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const admin = process.env.OH_HAI_BENCH_DATABASE_URL;
if (!admin) {
  // Run again inside a throwaway cluster; it is stopped and removed when this shell exits.
  const script = 'source .ci/postgres.sh >&2 && OH_HAI_BENCH_DATABASE_URL="$OH_HAI_TEST_DATABASE_URL" node bench/connect-cost.mjs "$@"';
  const r = spawnSync('bash', ['-c', script, 'bench', ...process.argv.slice(2)], { cwd: root, stdio: 'inherit' });
  process.exit(r.status ?? 1);
}
const { default: pg } = await import('pg');

const opt = (name, dflt) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : dflt;
};
const STREAMS = Number(opt('streams', 150));
const HOLD = Number(opt('hold', 1));
const SECONDS = Number(opt('seconds', 20));
const against = opt('against', null);
const checkouts = [{ label: 'this', dir: root }, ...(against === null ? [] : [{ label: 'against', dir: path.resolve(against) }])];
const KEY = randomBytes(16).toString('hex');
const TICKS = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;
const cpuOf = (pid) => {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(f[11]) + Number(f[12])) / TICKS;
};

// One admin connection for the run's own statements (databases made and dropped, backends looked up).
const adminPool = new pg.Pool({ connectionString: admin, max: 1 });
const adminQuery = async (text) => (await adminPool.query(text)).rows;

function call(base, method, p, token, body) {
  return new Promise((resolve, reject) => {
    const req = request(base + p, { method, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' } }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (d) => (text += d));
      res.on('error', reject);
      res.on('end', () => (res.statusCode >= 400 ? reject(new Error(`${method} ${p} ${res.statusCode} ${text}`)) : resolve(JSON.parse(text))));
    });
    req.on('error', reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

/** A Hub of `dir` on a fresh database, with an agent and `STREAMS` sessions of it (16 per agent at most). */
async function startHub(dir) {
  const db = `oh_hai_cc_${randomBytes(4).toString('hex')}`;
  await adminQuery(`CREATE DATABASE ${db}`);
  const url = new URL(admin);
  url.pathname = `/${db}`;
  const data = mkdtempSync(path.join(os.tmpdir(), 'oh-hai-bench-connect-'));
  const args = ['hub', 'serve', '--port', '0', '--data', data, '--admin-listen', '127.0.0.1:0', '--stream-max-hold-seconds', String(HOLD)];
  const proc = spawn(process.execPath, [path.join(dir, 'bin', 'oh-hai'), ...args], {
    // Nothing remembered: at deploy/'s 30 s hold a stream's token is long forgotten (1 s) when it reconnects.
    env: { ...process.env, MA2H_SIGNING_KEY: KEY, OH_HAI_HUB_DATABASE_URL: url.toString(), OH_HAI_HUB_CREDENTIAL_CACHE_MS: '0' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  proc.stdout.on('data', (d) => (out += d));
  const base = await hubReady(proc);
  const adminUrl = /^hub: admin \(healthz, readyz, metrics\) at (\S+)$/m.exec(out)?.[1];
  const human = readFileSync(path.join(data, 'human-token'), 'utf8').trim();
  const sessions = [];
  for (let i = 0; i < STREAMS; i += 16) {
    const agent = await call(base, 'POST', '/v1/account/agents', human, { label: `bench-${i}` });
    for (let j = i; j < Math.min(STREAMS, i + 16); j++) {
      const s = await call(base, 'POST', '/v1/sessions', agent.token, { client_key: `ck-${j}`, lease_seconds: 300 });
      sessions.push({ token: agent.token, id: s.session.id });
    }
  }
  return {
    db,
    proc,
    base,
    adminUrl,
    sessions,
    connects: 0,
    async stop() {
      proc.kill('SIGTERM');
      await new Promise((r) => proc.once('exit', r));
      rmSync(data, { recursive: true, force: true });
      await adminQuery(`DROP DATABASE ${db}`);
    },
  };
}

/** The CPU so far, in seconds, of the database's backends serving `hub` (its pool is opened at start and kept). */
async function databaseCpuOf(hub) {
  let total = 0;
  for (const { pid } of await adminQuery(`SELECT pid FROM pg_stat_activity WHERE datname = '${hub.db}'`)) {
    try {
      total += cpuOf(pid);
    } catch {
      // Gone meanwhile.
    }
  }
  return total;
}

/** Round trips of stream connects and their first pages so far. */
async function tripsOf(hub) {
  const text = await (await fetch(`${hub.adminUrl}/metrics`)).text();
  let n = 0;
  for (const m of text.matchAll(/^oh_hai_hub_db_round_trips_total\{work="([^"]+)",kind="(?:unit|read)"\} (\d+)$/gm))
    if (m[1] === 'GET /v1/inbox/stream' || m[1] === 'push') n += Number(m[2]);
  return n;
}

/** Hold one stream: connect, read until the Hub says reconnect, connect again at once over the kept connection; counts every `open`. */
function hold(hub, s, agent, running) {
  const once = () =>
    new Promise((resolve) => {
      const req = request(
        `${hub.base}/v1/inbox/stream?session=${s.id}`,
        { agent, headers: { accept: 'text/event-stream', authorization: `Bearer ${s.token}` } },
        (res) => {
          let seen = '';
          res.setEncoding('utf8');
          res.on('data', (d) => {
            seen += d;
            if (seen.includes('event: open')) {
              hub.connects += 1;
              seen = seen.slice(seen.indexOf('event: open') + 11);
            }
          });
          res.on('end', resolve);
          res.on('error', resolve);
        },
      );
      req.on('error', resolve);
      req.end();
    });
  return (async () => {
    while (running()) await once();
  })();
}

const hubs = [];
try {
  for (const c of checkouts) hubs.push({ ...c, hub: await startHub(c.dir) });
  let on = true;
  const agents = hubs.map(() => new Agent({ keepAlive: true, maxSockets: STREAMS }));
  const holders = hubs.flatMap(({ hub }, i) => hub.sessions.map((s) => hold(hub, s, agents[i], () => on)));
  // Two holds for every stream to connect and settle, then the window.
  await new Promise((r) => setTimeout(r, 2 * HOLD * 1000 + 1000));
  const start = await Promise.all(
    hubs.map(async ({ hub }) => ({ cpu: cpuOf(hub.proc.pid), db: await databaseCpuOf(hub), connects: hub.connects, trips: await tripsOf(hub) })),
  );
  await new Promise((r) => setTimeout(r, SECONDS * 1000));
  const end = await Promise.all(
    hubs.map(async ({ hub }) => ({ cpu: cpuOf(hub.proc.pid), db: await databaseCpuOf(hub), connects: hub.connects, trips: await tripsOf(hub) })),
  );
  on = false;
  console.log(`${STREAMS} streams per Hub, hold ${HOLD} s, ${SECONDS} s window, both Hubs at once (a shared machine makes the figures noisy)`);
  console.log('checkout  connects/s  Hub CPU ms/connect  DB CPU ms/connect  DB round trips/connect');
  const perConnect = hubs.map(({ label, hub }, i) => {
    const n = end[i].connects - start[i].connects;
    const ms = ((end[i].cpu - start[i].cpu) * 1000) / n;
    const dbMs = ((end[i].db - start[i].db) * 1000) / n;
    const trips = (end[i].trips - start[i].trips) / n;
    console.log(
      `${label.padEnd(8)}  ${(n / SECONDS).toFixed(0).padStart(10)}  ${ms.toFixed(3).padStart(18)}  ${dbMs.toFixed(3).padStart(17)}  ${trips.toFixed(2).padStart(22)}   (${checkouts[i].dir})`,
    );
    return { ms, dbMs };
  });
  if (perConnect.length === 2) {
    const [a, b] = perConnect;
    console.log(`per connect, this / against: Hub CPU ${(a.ms / b.ms).toFixed(3)}, DB CPU ${(a.dbMs / b.dbMs).toFixed(3)}`);
  }
  await Promise.race([Promise.all(holders), new Promise((r) => setTimeout(r, 2 * HOLD * 1000 + 2000))]);
  for (const a of agents) a.destroy();
} finally {
  for (const { hub } of hubs) await hub.stop();
  await adminPool.end();
}
