// What ONE stream connect costs a PostgreSQL Hub, this checkout against another in the same run:
// both Hubs (each on a database of its own in one PostgreSQL) hold S streams with a short hold
// bound at the same time, every stream reconnecting over its kept connection as soon as it is told
// to, so both see the same machine load; then each Hub's CPU per connect (its process's utime +
// stime: on loopback its sockets' TCP work is charged to it), the database round trips per connect
// (its own per-work counter, the first page included) and the ratio, over the same window.
// Needs `npm run build` in both checkouts. PostgreSQL: OH_HAI_BENCH_DATABASE_URL (an admin URL),
// else a throwaway cluster from .ci/postgres.sh. Never run by CI.
// --cpu-prof <dir>: each Hub writes a V8 CPU profile to <dir>/<label>, with the window's bounds
// (idle-phases.json) beside it, for bench/connect-profile.mjs.
// Usage: node bench/connect-cost.mjs [--against <other checkout>] [--streams 150] [--hold 1] [--seconds 20] [--cpu-prof <dir>]
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Agent, request } from 'node:http';
import { adminOf, adminUrlOrRerun, call, checkoutsToCompare, cpuOf, opt, tripsOf } from './pg-ab.mjs';

const admin = adminUrlOrRerun('bench/connect-cost.mjs');
const STREAMS = Number(opt('streams', 150));
const HOLD = Number(opt('hold', 1));
const SECONDS = Number(opt('seconds', 20));
const checkouts = checkoutsToCompare();
const KEY = randomBytes(16).toString('hex');
const db = await adminOf(admin);
const profAt = process.argv.indexOf('--cpu-prof');
const CPU_PROF = profAt > 0 ? path.resolve(process.argv[profAt + 1]) : null;
/** CLOCK_MONOTONIC µs, as a V8 profile's timestamps. */
const monoUs = () => Number(process.hrtime.bigint() / 1000n);

/** A Hub of `dir` on a fresh database, with an agent and `STREAMS` sessions of it (16 per agent at most). */
async function startHub(dir, label) {
  const profDir = CPU_PROF === null ? null : path.join(CPU_PROF, label);
  if (profDir !== null) mkdirSync(profDir, { recursive: true });
  const hub = await db.startHub(dir, {
    args: ['--stream-max-hold-seconds', String(HOLD)],
    // Nothing remembered: at deploy/'s 30 s hold a stream's token is long forgotten (1 s) when it reconnects.
    env: { MA2H_SIGNING_KEY: KEY, OH_HAI_HUB_CREDENTIAL_CACHE_MS: '0' },
    nodeFlags: profDir === null ? [] : ['--cpu-prof', `--cpu-prof-dir=${profDir}`],
  });
  const sessions = [];
  for (let i = 0; i < STREAMS; i += 16) {
    const agent = await call(hub.base, 'POST', '/v1/account/agents', hub.human, { label: `bench-${i}` });
    for (let j = i; j < Math.min(STREAMS, i + 16); j++) {
      const s = await call(hub.base, 'POST', '/v1/sessions', agent.token, { client_key: `ck-${j}`, lease_seconds: 300 });
      sessions.push({ token: agent.token, id: s.session.id });
    }
  }
  return Object.assign(hub, { sessions, connects: 0, profDir });
}

/** The CPU of stream connects and their first pages so far: the Hub's, its backends', and its round trips. */
const sample = async (hub) => ({
  cpu: cpuOf(hub.proc.pid),
  db: await db.databaseCpuOf(hub),
  connects: hub.connects,
  trips: await tripsOf(hub, ['GET /v1/inbox/stream', 'push']),
});

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
  for (const c of checkouts) hubs.push({ ...c, hub: await startHub(c.dir, c.label) });
  let on = true;
  const agents = hubs.map(() => new Agent({ keepAlive: true, maxSockets: STREAMS }));
  const holders = hubs.flatMap(({ hub }, i) => hub.sessions.map((s) => hold(hub, s, agents[i], () => on)));
  // Two holds for every stream to connect and settle, then the window.
  await new Promise((r) => setTimeout(r, 2 * HOLD * 1000 + 1000));
  const start = await Promise.all(hubs.map(({ hub }) => sample(hub)));
  const windowUs = monoUs();
  await new Promise((r) => setTimeout(r, SECONDS * 1000));
  const end = await Promise.all(hubs.map(({ hub }) => sample(hub)));
  for (const { hub } of hubs) if (hub.profDir !== null) writeFileSync(path.join(hub.profDir, 'idle-phases.json'), JSON.stringify([[windowUs, monoUs()]]));
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
  await db.end();
}
