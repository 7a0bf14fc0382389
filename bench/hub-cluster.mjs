// The Hub on one machine vs many instances, in one run: the SQLite Hub, then 1 and 2 instances
// on one PostgreSQL database. For each: S streams held open in total (split evenly over the
// instances), M sends at C in flight (each to a random session, sent to the instances in turn),
// sends/s over the send phase, send→push latency p50/p99, and the Hub processes' CPU per send.
// Needs `npm run build`. PostgreSQL: OH_HAI_BENCH_DATABASE_URL (an admin URL; a database per
// run is created and dropped), else a throwaway cluster from .ci/postgres.sh. Never run by CI.
// Usage: node bench/hub-cluster.mjs [--streams 1000] [--messages 2000] [--concurrency 50]
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { hubReady } from './bridge-world.mjs';
import { holdStream, pushTimer } from './hub-streams.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const admin = process.env.OH_HAI_BENCH_DATABASE_URL;
if (!admin) {
  // Run again inside a throwaway cluster; it is stopped and removed when this shell exits.
  const r = spawnSync(
    'bash',
    [
      '-c',
      'source .ci/postgres.sh >&2 && OH_HAI_BENCH_DATABASE_URL="$OH_HAI_TEST_DATABASE_URL" node bench/hub-cluster.mjs "$@"',
      'bench',
      ...process.argv.slice(2),
    ],
    {
      cwd: root,
      stdio: 'inherit',
    },
  );
  process.exit(r.status ?? 1);
}
const { default: pg } = await import('pg');

const arg = (name, dflt) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
};
const STREAMS = arg('streams', 1000);
const MESSAGES = arg('messages', 2000);
const CONCURRENCY = arg('concurrency', 50);
const KEY = randomBytes(16).toString('hex');
// Holds long enough that reconnects on the bound do not dominate a run (under nginx's 75 s read timeout).
const HUB_ARGS = ['--stream-max-hold-seconds', '55', '--keepalive-seconds', '15'];
const keepAlive = new Agent({ keepAlive: true, maxSockets: CONCURRENCY * 2 });

async function adminQuery(text) {
  const c = new pg.Client({ connectionString: admin });
  await c.connect();
  try {
    await c.query(text);
  } finally {
    await c.end();
  }
}

function startHub(dir, env) {
  const hub = spawn(process.execPath, [path.join(root, 'bin', 'oh-hai'), 'hub', 'serve', '--port', '0', '--data', dir, ...HUB_ARGS], {
    env: { ...process.env, MA2H_SIGNING_KEY: KEY, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return { proc: hub, url: hubReady(hub) };
}

function call(base, method, p, token, body) {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : JSON.stringify(body);
    const req = request(base + p, { method, agent: keepAlive, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' } }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (d) => (text += d));
      res.on('end', () => (res.statusCode >= 400 ? reject(new Error(`${method} ${p} ${res.statusCode} ${text}`)) : resolve(JSON.parse(text))));
    });
    req.on('error', reject);
    req.end(data);
  });
}

const TICKS = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;
/** utime + stime of a process, in seconds (fields 14 and 15 of /proc/<pid>/stat). */
const cpuOf = (pid) => {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(f[11]) + Number(f[12])) / TICKS;
};

async function run(label, instances, database) {
  const dirs = [];
  const hubs = [];
  let dbName = null;
  let env = {};
  if (database) {
    dbName = `oh_hai_bench_${randomBytes(4).toString('hex')}`;
    await adminQuery(`CREATE DATABASE ${dbName}`);
    const u = new URL(admin);
    u.pathname = `/${dbName}`;
    env = { OH_HAI_HUB_DATABASE_URL: u.toString(), OH_HAI_HUB_DB_POOL_MAX: '20' };
  }
  try {
    for (let i = 0; i < instances; i++) {
      const dir = mkdtempSync(path.join(os.tmpdir(), 'oh-hai-bench-cluster-'));
      dirs.push(dir);
      const h = startHub(dir, env);
      hubs.push({ proc: h.proc, url: await h.url });
    }
    const urls = hubs.map((h) => h.url);
    const human = readFileSync(path.join(dirs[0], 'human-token'), 'utf8').trim();
    const sender = await call(urls[0], 'POST', '/v1/account/agents', human, { label: 'bench-sender' });
    // 16 live sessions per agent at most.
    const sessions = [];
    for (let i = 0; i < STREAMS; i += 16) {
      const a = await call(urls[0], 'POST', '/v1/account/agents', human, { label: `bench-${i}` });
      const n = Math.min(16, STREAMS - i);
      const made = await Promise.all(
        Array.from({ length: n }, (_, j) => call(urls[(i + j) % urls.length], 'POST', '/v1/sessions', a.token, { client_key: `b-${i + j}` })),
      );
      for (const [j, s] of made.entries()) sessions.push({ token: a.token, id: s.session.id, address: s.session.address, url: urls[(i + j) % urls.length] });
    }

    const timer = pushTimer();
    let opened = 0;
    const open = [];
    for (const s of sessions) open.push(...holdStream(s, timer, { onOpen: () => opened++ }));
    const openDeadline = performance.now() + 300_000;
    while (opened < STREAMS && performance.now() < openDeadline) await new Promise((r) => setTimeout(r, 50));

    const cpu0 = hubs.map((h) => cpuOf(h.proc.pid));
    let next = 0;
    const t0 = performance.now();
    const worker = async () => {
      while (next < MESSAGES) {
        const n = next++;
        const s = sessions[Math.floor(Math.random() * sessions.length)];
        const start = performance.now();
        const r = await call(urls[n % urls.length], 'POST', '/v1/messages', sender.token, { to: s.address, intent: 'notify', text: `bench ${n}` });
        timer.sent(r.message.id, start);
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    const sendSeconds = (performance.now() - t0) / 1000;
    while (timer.latencies.length < MESSAGES && performance.now() - t0 < 120_000) await new Promise((r) => setTimeout(r, 20));
    const cpu = hubs.reduce((sum, h, i) => sum + cpuOf(h.proc.pid) - cpu0[i], 0);
    for (const r of open) r.destroy();
    return {
      label,
      instances,
      streams: opened,
      sendsPerSecond: MESSAGES / sendSeconds,
      p50: timer.pct(50),
      p99: timer.pct(99),
      seen: timer.latencies.length,
      cpuMsPerSend: (cpu * 1000) / MESSAGES,
    };
  } finally {
    for (const h of hubs) {
      h.proc.kill('SIGTERM');
      await new Promise((r) => (h.proc.exitCode !== null ? r() : h.proc.once('exit', r)));
    }
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
    if (dbName) await adminQuery(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
  }
}

const results = [];
results.push(await run('sqlite', 1, false));
results.push(await run('postgres', 1, true));
results.push(await run('postgres', 2, true));

console.log(`streams ${STREAMS} in total, ${MESSAGES} sends at ${CONCURRENCY} in flight; ${os.cpus().length} cores (shared machine: figures are noisy)`);
console.log('store      instances  streams  sends/s  push p50 ms  push p99 ms  pushes seen  Hub CPU ms/send');
for (const r of results) {
  console.log(
    `${r.label.padEnd(10)} ${String(r.instances).padStart(9)}  ${String(r.streams).padStart(7)}  ${r.sendsPerSecond.toFixed(0).padStart(7)}  ${r.p50.toFixed(1).padStart(11)}  ${r.p99.toFixed(1).padStart(11)}  ${String(r.seen).padStart(11)}  ${r.cpuMsPerSend.toFixed(2).padStart(15)}`,
  );
}
const base = results[0];
for (const r of results.slice(1))
  console.log(`${r.label} ×${r.instances} vs sqlite: sends/s ${(r.sendsPerSecond / base.sendsPerSecond).toFixed(2)}x, p99 ${(r.p99 / base.p99).toFixed(2)}x`);
keepAlive.destroy();
process.exit(0);
