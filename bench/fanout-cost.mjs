// What a second Hub instance costs per send (issue 14), in ONE run: two deployments on one
// PostgreSQL at the same time, each on a database of its own — by default this checkout as ONE
// instance and as TWO (with --against <checkout>: this checkout and the other, two instances each,
// for a before/after of a change) — so both see the same machine load. Each holds S streams split
// evenly over its instances (a long hold: no reconnects, so the figures are the sends' and their
// pushes', not the connects'), and takes the same paced sends (R a second, at most 50 in flight,
// sent to its instances in turn, each to a random stream). Per deployment, over the same windows:
// - idle (streams held, nothing sent): Hub and database CPU a second, round trips a second by work
//   (sweeps, presence): what an instance costs before it serves anything;
// - sends: Hub CPU per send (every instance summed), database CPU per send (every backend of its
//   database) and the listeners' backends' share of it, database round trips per send (the send's
//   and its push's), batched page reads per send and streams per read, wake-ups heard from another
//   instance per send, push p50/p99.
// Needs `npm run build` (in both checkouts). PostgreSQL: OH_HAI_BENCH_DATABASE_URL (an admin URL),
// else a throwaway cluster from .ci/postgres.sh. Never run by CI.
// Usage: node bench/fanout-cost.mjs [--streams 400] [--rate 150] [--seconds 20] [--idle 10] [--warmup 300] [--pools a,b] [--one-sided] [--against <checkout>]
//          [--cpu-prof <dir>]   (every Hub writes a V8 CPU profile there; then, per deployment, the functions
//          whose inclusive time per send differs most between the two, over the send window)
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { hubReady } from './bridge-world.mjs';
import { holdStream, pushTimer } from './hub-streams.mjs';
import { keepAliveCaller } from './sender.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const admin = process.env.OH_HAI_BENCH_DATABASE_URL;
if (!admin) {
  // Run again inside a throwaway cluster; it is stopped and removed when this shell exits.
  const script = 'source .ci/postgres.sh >&2 && OH_HAI_BENCH_DATABASE_URL="$OH_HAI_TEST_DATABASE_URL" node bench/fanout-cost.mjs "$@"';
  const r = spawnSync('bash', ['-c', script, 'bench', ...process.argv.slice(2)], { cwd: root, stdio: 'inherit' });
  process.exit(r.status ?? 1);
}
const { default: pg } = await import('pg');

const opt = (name, dflt) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : dflt;
};
const STREAMS = Number(opt('streams', 400));
const RATE = Number(opt('rate', 150));
const SECONDS = Number(opt('seconds', 20));
const IDLE = Number(opt('idle', 10));
const IN_FLIGHT = 50;
const WARMUP = Number(opt('warmup', 300));
/** --pools a,b: each instance's database pool in the first and the second deployment (OH_HAI_HUB_DB_POOL_MAX); the Hub's default otherwise. */
const POOLS = (opt('pools', null)?.split(',') ?? []).map(Number);
/**
 * --one-sided: the second deployment's streams and sends all go to its first instance; the others
 * only hear every NOTIFY. Its difference from one instance is then what the fan-out itself costs
 * (an instance hearing sends it holds no stream for), apart from splitting the work over processes.
 */
const ONE_SIDED = process.argv.includes('--one-sided');
const against = opt('against', null);
const CPU_PROF = opt('cpu-prof', null) === null ? null : path.resolve(opt('cpu-prof', null));
const monoUs = () => Number(process.hrtime.bigint() / 1000n);
const layouts =
  against === null
    ? [
        { label: 'x1', dir: root, instances: 1 },
        { label: 'x2', dir: root, instances: 2 },
      ]
    : [
        { label: 'this x2', dir: root, instances: 2 },
        { label: 'against x2', dir: path.resolve(against), instances: 2 },
      ];
const KEY = randomBytes(16).toString('hex');
const TICKS = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;
const cpuOf = (pid) => {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(f[11]) + Number(f[12])) / TICKS;
};
/** A process's kernel CPU (s), and its context switches: voluntary (it blocked: an event loop waiting for its next event) and not (preempted). */
const sysOf = (pid) => Number(readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')[12]) / TICKS;
const switchesOf = (pid) => {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return { voluntary: Number(/^voluntary_ctxt_switches:\s+(\d+)/m.exec(status)[1]), forced: Number(/^nonvoluntary_ctxt_switches:\s+(\d+)/m.exec(status)[1]) };
};
const adminPool = new pg.Pool({ connectionString: admin, max: 1 });
const adminQuery = async (text) => (await adminPool.query(text)).rows;

/** One deployment: `instances` Hubs of checkout `dir` on a database of its own, STREAMS sessions split over them. */
async function deploy({ label, dir, instances }, pool, serving = instances) {
  const db = `oh_hai_fan_${randomBytes(4).toString('hex')}`;
  await adminQuery(`CREATE DATABASE ${db}`);
  const url = new URL(admin);
  url.pathname = `/${db}`;
  const hubs = [];
  for (let i = 0; i < instances; i++) {
    const data = mkdtempSync(path.join(os.tmpdir(), 'oh-hai-bench-fanout-'));
    const args = ['hub', 'serve', '--port', '0', '--data', data, '--admin-listen', '127.0.0.1:0', '--stream-max-hold-seconds', '600'];
    const prof = CPU_PROF === null ? [] : ['--cpu-prof', '--cpu-prof-dir', path.join(CPU_PROF, db)];
    const proc = spawn(process.execPath, [...prof, path.join(dir, 'bin', 'oh-hai'), ...args], {
      env: { ...process.env, MA2H_SIGNING_KEY: KEY, OH_HAI_HUB_DATABASE_URL: url.toString(), ...(pool ? { OH_HAI_HUB_DB_POOL_MAX: String(pool) } : {}) },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    proc.stdout.on('data', (d) => (out += d));
    const base = await hubReady(proc);
    hubs.push({ proc, base, data, adminUrl: /^hub: admin \(healthz, readyz, metrics\) at (\S+)$/m.exec(out)?.[1] });
  }
  const human = readFileSync(path.join(hubs[0].data, 'human-token'), 'utf8').trim();
  const call = keepAliveCaller(hubs[0].base, 4);
  const sender = await call(human, 'POST', '/v1/account/agents', { label: 'sender' });
  const sessions = [];
  for (let i = 0; i < STREAMS; i += 16) {
    const agent = await call(human, 'POST', '/v1/account/agents', { label: `bench-${i}` });
    for (let j = i; j < Math.min(STREAMS, i + 16); j++) {
      const s = await call(agent.token, 'POST', '/v1/sessions', { client_key: `ck-${j}`, lease_seconds: 3600 });
      sessions.push({ token: agent.token, id: s.session.id, address: s.session.address, url: hubs[j % serving].base });
    }
  }
  call.close();
  return {
    label,
    dir,
    db,
    profDir: db,
    hubs,
    sender,
    sessions,
    callers: hubs.slice(0, serving).map((h) => keepAliveCaller(h.base, IN_FLIGHT)),
    timer: pushTimer(),
  };
}

async function metricsText(hub) {
  return (await fetch(`${hub.adminUrl}/metrics`)).text();
}
const sum = (text, re) => [...text.matchAll(re)].reduce((n, m) => n + Number(m[m.length - 1]), 0);

/** A deployment's counters now: CPU (Hubs, database backends, listener backends), round trips by work, page reads, wake-ups heard. */
async function sample(d) {
  const backends = await adminQuery(`SELECT pid, application_name FROM pg_stat_activity WHERE datname = '${d.db}'`);
  let dbCpu = 0;
  let listenCpu = 0;
  for (const b of backends) {
    try {
      const c = cpuOf(b.pid);
      dbCpu += c;
      if (b.application_name === 'oh-hai-hub-listen') listenCpu += c;
    } catch {
      // Gone meanwhile.
    }
  }
  const texts = await Promise.all(d.hubs.map(metricsText));
  const trips = new Map();
  for (const t of texts)
    for (const m of t.matchAll(/^oh_hai_hub_db_round_trips_total\{work="([^"]+)",kind="(?:unit|read)"\} (\d+)$/gm))
      trips.set(m[1], (trips.get(m[1]) ?? 0) + Number(m[2]));
  const all = texts.join('\n');
  return {
    at: performance.now(),
    hubCpu: d.hubs.reduce((n, h) => n + cpuOf(h.proc.pid), 0),
    hubSys: d.hubs.reduce((n, h) => n + sysOf(h.proc.pid), 0),
    voluntary: d.hubs.reduce((n, h) => n + switchesOf(h.proc.pid).voluntary, 0),
    forced: d.hubs.reduce((n, h) => n + switchesOf(h.proc.pid).forced, 0),
    dbCpu,
    listenCpu,
    trips,
    reads: sum(all, /^oh_hai_hub_push_pages_per_read_count (\S+)$/gm),
    paged: sum(all, /^oh_hai_hub_push_pages_per_read_sum (\S+)$/gm),
    heard: sum(all, /^oh_hai_hub_notify_lag_seconds_count (\S+)$/gm),
  };
}

/** `count` sends to random streams of `d`, paced at RATE a second with at most IN_FLIGHT at once, to its instances in turn. */
async function sendPaced(d, count, timed) {
  let next = 0;
  const start = performance.now();
  const one = async (n) => {
    const s = d.sessions[Math.floor(Math.random() * d.sessions.length)];
    const t = performance.now();
    const send = () => d.callers[n % d.callers.length](d.sender.token, 'POST', '/v1/messages', { to: s.address, intent: 'notify', text: `fan ${n}` });
    // A kept-alive connection the Hub closed as idle fails the write (EPIPE) before the request went out: sent again once.
    const r = await send().catch((e) => (e.reused ? send() : Promise.reject(e)));
    if (timed) d.timer.sent(r.message.id, t, undefined);
  };
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (next < count) {
        const n = next++;
        const due = start + (n * 1000) / RATE;
        const wait = due - performance.now();
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
        await one(n);
      }
    }),
  );
}

const deployments = [];
const holders = [];
try {
  for (const [i, l] of layouts.entries()) deployments.push(await deploy(l, POOLS[i], ONE_SIDED && i === 1 ? 1 : l.instances));
  for (const d of deployments) {
    const opened = { n: 0 };
    for (const s of d.sessions) holders.push(holdStream(s, d.timer, { onOpen: () => opened.n++ }));
    d.opened = opened;
  }
  const deadline = performance.now() + 120_000;
  while (deployments.some((d) => d.opened.n < STREAMS) && performance.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  // Warm-up (untimed): compiled send paths, prepared statements on every pooled connection.
  await Promise.all(deployments.map((d) => sendPaced(d, WARMUP, false)));
  await new Promise((r) => setTimeout(r, 2000));
  for (const d of deployments) d.timer.latencies.length = 0;

  const idle0 = await Promise.all(deployments.map(sample));
  await new Promise((r) => setTimeout(r, IDLE * 1000));
  const idle1 = await Promise.all(deployments.map(sample));
  const sends = Math.round(RATE * SECONDS);
  const send0 = await Promise.all(deployments.map(sample));
  const window = [monoUs()];
  await Promise.all(deployments.map((d) => sendPaced(d, sends, true)));
  window.push(monoUs());
  const pushed = performance.now() + 30_000;
  while (deployments.some((d) => d.timer.latencies.length < sends) && performance.now() < pushed) await new Promise((r) => setTimeout(r, 50));
  const send1 = await Promise.all(deployments.map(sample));

  if (ONE_SIDED) console.log(`${layouts[1].label}: every stream and send on its first instance; the others only hear the NOTIFYs`);
  console.log(`pool per instance: ${layouts.map((l, k) => `${l.label} ${POOLS[k] || 'default'}`).join(', ')}`);
  console.log(
    `${STREAMS} streams per deployment, ${sends} sends each at ${RATE}/s (≤ ${IN_FLIGHT} in flight), both deployments at once; load ${os.loadavg()[0].toFixed(1)}`,
  );
  console.log(`idle ${IDLE} s (streams held, no sends, no reconnects):`);
  for (const [i, d] of deployments.entries()) {
    const s = (idle1[i].at - idle0[i].at) / 1000;
    const works = [...idle1[i].trips].map(([w, n]) => [w, n - (idle0[i].trips.get(w) ?? 0)]).filter(([, n]) => n > 0);
    console.log(
      `  ${d.label.padEnd(10)} Hub CPU ${((idle1[i].hubCpu - idle0[i].hubCpu) / s).toFixed(4)} s/s, DB CPU ${((idle1[i].dbCpu - idle0[i].dbCpu) / s).toFixed(4)} s/s, round trips/s: ${works.map(([w, n]) => `${w} ${(n / s).toFixed(1)}`).join(', ')}`,
    );
  }
  console.log('sends:');
  console.log(
    '  deployment  pushed  Hub CPU ms/send  DB CPU ms/send  (listeners)  trips/send (send+push)  page reads/send  streams/read  heard/send  push p50  p99 ms',
  );
  const per = deployments.map((d, i) => {
    const a = send0[i];
    const b = send1[i];
    const trip = (w) => (b.trips.get(w) ?? 0) - (a.trips.get(w) ?? 0);
    const row = {
      hub: ((b.hubCpu - a.hubCpu) * 1000) / sends,
      db: ((b.dbCpu - a.dbCpu) * 1000) / sends,
      listen: ((b.listenCpu - a.listenCpu) * 1000) / sends,
      trips: (trip('POST /v1/messages') + trip('push')) / sends,
      reads: (b.reads - a.reads) / sends,
      perRead: (b.paged - a.paged) / Math.max(1, b.reads - a.reads),
      heard: (b.heard - a.heard) / sends,
      sys: ((b.hubSys - a.hubSys) * 1000) / sends,
      voluntary: (b.voluntary - a.voluntary) / sends,
      forced: (b.forced - a.forced) / sends,
    };
    console.log(
      `  ${d.label.padEnd(10)}  ${String(d.timer.latencies.length).padStart(6)}  ${row.hub.toFixed(3).padStart(15)}  ${row.db.toFixed(3).padStart(14)}  ${row.listen.toFixed(3).padStart(11)}  ${row.trips.toFixed(2).padStart(23)}  ${row.reads.toFixed(3).padStart(15)}  ${row.perRead.toFixed(2).padStart(12)}  ${row.heard.toFixed(2).padStart(10)}  ${d.timer.pct(50)?.toFixed(1).padStart(8)}  ${d.timer.pct(99)?.toFixed(1).padStart(6)}   (${d.dir})`,
    );
    console.log(
      `              Hub kernel CPU ${row.sys.toFixed(3)} ms/send; the Hubs' context switches per send: ${row.voluntary.toFixed(2)} voluntary (an event loop waiting for work), ${row.forced.toFixed(2)} preempted`,
    );
    return row;
  });
  const [x, y] = per;
  console.log(
    `${deployments[1].label} − ${deployments[0].label} per send: Hub CPU ${(y.hub - x.hub).toFixed(3)} ms, DB CPU ${(y.db - x.db).toFixed(3)} ms (listeners ${(y.listen - x.listen).toFixed(3)}); ratio ${deployments[0].label}/${deployments[1].label}: Hub ${(x.hub / y.hub).toFixed(3)}, DB ${(x.db / y.db).toFixed(3)}`,
  );
  if (CPU_PROF !== null) {
    // The profiles are written at exit: the Hubs are stopped first.
    await stopAll();
    const inclusive = deployments.map((d) => profileBy(path.join(CPU_PROF, d.profDir), window, sends));
    const names = new Set(inclusive.flatMap((m) => [...m.keys()]));
    const rows = [...names].map((n) => [n, inclusive[0].get(n) ?? 0, inclusive[1].get(n) ?? 0]).sort((a, b) => Math.abs(b[2] - b[1]) - Math.abs(a[2] - a[1]));
    console.log(
      `inclusive ms per send in the send window (V8 profiles, every instance summed), by function: ${deployments[0].label} | ${deployments[1].label} | difference`,
    );
    for (const [n, a, b] of rows.slice(0, 40)) console.log(`  ${a.toFixed(3).padStart(7)} ${b.toFixed(3).padStart(7)} ${(b - a).toFixed(3).padStart(7)}  ${n}`);
  }
} finally {
  await stopAll();
}

/** Per function (name and file), the sampled time of the stacks it is on within `win` (µs, monotonic), in ms per send, over every profile in `dir`. */
function profileBy(dir, win, sends) {
  const out = new Map();
  for (const f of readdirSync(dir).filter((x) => x.endsWith('.cpuprofile'))) {
    const p = JSON.parse(readFileSync(path.join(dir, f), 'utf8'));
    const byId = new Map(p.nodes.map((n) => [n.id, n]));
    const parent = new Map();
    for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
    let t = p.startTime;
    for (const [i, id] of p.samples.entries()) {
      t += p.timeDeltas[i];
      if (t < win[0] || t > win[1] || byId.get(id).callFrame.functionName === '(idle)') continue;
      const dt = (p.timeDeltas[i + 1] ?? 0) / 1000 / sends;
      const seen = new Set();
      for (let n = id; n !== undefined; n = parent.get(n)) {
        const cf = byId.get(n).callFrame;
        const key = `${cf.functionName || '(anonymous)'} ${path.basename(cf.url)}:${cf.lineNumber}`;
        if (seen.has(key)) continue;
        seen.add(key);
        out.set(key, (out.get(key) ?? 0) + dt);
      }
    }
  }
  return out;
}

async function stopAll() {
  for (const h of holders) h.stop();
  holders.length = 0;
  for (const d of deployments) {
    for (const c of d.callers) c.close();
    for (const h of d.hubs.splice(0)) {
      h.proc.kill('SIGTERM');
      await new Promise((r) => h.proc.once('exit', r));
      rmSync(h.data, { recursive: true, force: true });
    }
    if (d.db !== null) await adminQuery(`DROP DATABASE ${d.db}`);
    d.db = null;
  }
}
await adminPool.end();
