// What ONE send costs a PostgreSQL Hub, this checkout against another in the same run (issue 14):
// both Hubs (each on a database of its own in one PostgreSQL) take sends at the same time, C in
// flight each, every send to one of S sessions of one recipient agent, each holding a stream (so
// every send is pushed as well, as in the 10,000-stream bench); then per Hub, over the same
// window: sends/s, its process's CPU per send (utime + stime: on loopback its sockets' TCP work is
// charged to it), its database backends' CPU per send, the database round trips per send (its own
// per-work counter: `POST /v1/messages`; the pushes' reads beside it), and send→push and
// send→202 latency. Both Hubs share the machine's load, so only the ratios are figures.
// Needs `npm run build` in both checkouts. PostgreSQL: OH_HAI_BENCH_DATABASE_URL (an admin URL),
// else a throwaway cluster from .ci/postgres.sh. Never run by CI.
// Usage: node bench/pg-send-cost.mjs [--against <other checkout>] [--unix this|against|both] [--sessions 16] [--concurrency 50] [--seconds 20] [--warmup 500]
import { randomBytes } from 'node:crypto';
import { percentile, until } from './bridge-world.mjs';
import { holdStream, pushTimer } from './hub-streams.mjs';
import { keepAliveCaller } from './sender.mjs';
import { adminOf, adminUrlOrRerun, call, checkoutsToCompare, cpuOf, opt, tripsOf } from './pg-ab.mjs';

const admin = adminUrlOrRerun('bench/pg-send-cost.mjs');
// One agent may hold 16 live sessions.
const SESSIONS = Math.min(16, Number(opt('sessions', 16)));
const CONCURRENCY = Number(opt('concurrency', 50));
const SECONDS = Number(opt('seconds', 20));
const WARMUP = Number(opt('warmup', 500));
// Sends/s per Hub, paced (at most CONCURRENCY in flight): both Hubs at one rate, so neither batches
// more pushes per page read for being faster. Unset: as fast as CONCURRENCY in flight allows.
const RATE = Number(opt('rate', 0));
const checkouts = checkoutsToCompare();
const KEY = randomBytes(16).toString('hex');
const db = await adminOf(admin);

/** A Hub of `dir` on a fresh database: a sender, and a recipient whose `SESSIONS` sessions each hold a stream. */
async function startHub(dir, unix) {
  const hub = await db.startHub(dir, { args: ['--stream-max-hold-seconds', '30'], env: { MA2H_SIGNING_KEY: KEY }, unix });
  const recipient = await call(hub.base, 'POST', '/v1/account/agents', hub.human, { label: 'recipient' });
  const sender = await call(hub.base, 'POST', '/v1/account/agents', hub.human, { label: 'sender' });
  const sessions = [];
  for (let i = 0; i < SESSIONS; i++) {
    const s = await call(hub.base, 'POST', '/v1/sessions', recipient.token, { client_key: `ck-${i}`, lease_seconds: 300 });
    sessions.push({ url: hub.base, id: s.session.id, token: recipient.token, address: s.session.address });
  }
  const timer = pushTimer();
  let opened = 0;
  const streams = sessions.map((s) => holdStream(s, timer, { onOpen: () => (opened += 1) }));
  await until(() => opened === SESSIONS, 'every stream open');
  return Object.assign(hub, { sender: sender.token, sessions, timer, streams, send: keepAliveCaller(hub.base, CONCURRENCY), sends: 0, answered: [] });
}

/** `CONCURRENCY` senders on `hub` while `running()`, or until `limit` sends in all. */
async function sendLoad(hub, running, limit = Infinity) {
  let next = 0;
  const t0 = performance.now();
  const worker = async () => {
    while (running() && next < limit) {
      const n = next++;
      const due = RATE > 0 ? t0 + (n * 1000) / RATE - performance.now() : 0;
      if (due > 0) await new Promise((r) => setTimeout(r, due));
      const s = hub.sessions[n % hub.sessions.length];
      const start = performance.now();
      const r = await hub.send(hub.sender, 'POST', '/v1/messages', { to: s.address, intent: 'notify', text: `bench ${n}` });
      hub.answered.push(performance.now() - start);
      hub.timer.sent(r.message.id, start);
      hub.sends += 1;
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
}

const sample = async (hub) => ({
  cpu: cpuOf(hub.proc.pid),
  db: await db.databaseCpuOf(hub),
  sends: hub.sends,
  trips: await tripsOf(hub, ['POST /v1/messages']),
  push: await tripsOf(hub, ['push']),
  pushed: hub.timer.latencies.length,
  answered: hub.answered.length,
});

const hubs = [];
try {
  for (const c of checkouts) hubs.push({ ...c, hub: await startHub(c.dir, c.unix) });
  // The send path compiled in both before the window (a Hub serving a fleet has done so).
  await Promise.all(hubs.map(({ hub }) => sendLoad(hub, () => true, WARMUP)));
  await until(() => hubs.every(({ hub }) => hub.timer.latencies.length === hub.sends), 'every warm-up send pushed');
  const start = await Promise.all(hubs.map(({ hub }) => sample(hub)));
  const t0 = performance.now();
  await Promise.all(hubs.map(({ hub }) => sendLoad(hub, () => performance.now() - t0 < SECONDS * 1000)));
  const seconds = (performance.now() - t0) / 1000;
  await until(() => hubs.every(({ hub }) => hub.timer.latencies.length === hub.sends), 'every send pushed');
  const end = await Promise.all(hubs.map(({ hub }) => sample(hub)));
  console.log(
    `${SESSIONS} streams and ${CONCURRENCY} sends in flight per Hub${RATE > 0 ? ` at most, paced at ${RATE}/s` : ''}, ${seconds.toFixed(1)} s, both Hubs at once (a shared machine: only the ratios are figures)`,
  );
  console.log('checkout  sends/s  Hub CPU ms/send  DB CPU ms/send  round trips/send  push reads/send  push p50/p99 ms  202 p50/p99 ms');
  const per = hubs.map(({ label, hub }, i) => {
    const n = end[i].sends - start[i].sends;
    const pushes = hub.timer.latencies.slice(start[i].pushed);
    const answers = hub.answered.slice(start[i].answered);
    const row = {
      ms: ((end[i].cpu - start[i].cpu) * 1000) / n,
      dbMs: ((end[i].db - start[i].db) * 1000) / n,
      trips: (end[i].trips - start[i].trips) / n,
      reads: (end[i].push - start[i].push) / n,
    };
    console.log(
      `${label.padEnd(8)}  ${(n / seconds).toFixed(0).padStart(7)}  ${row.ms.toFixed(3).padStart(15)}  ${row.dbMs.toFixed(3).padStart(14)}  ${row.trips.toFixed(2).padStart(16)}  ${row.reads.toFixed(2).padStart(15)}  ${`${percentile(pushes, 50).toFixed(1)}/${percentile(pushes, 99).toFixed(1)}`.padStart(15)}  ${`${percentile(answers, 50).toFixed(1)}/${percentile(answers, 99).toFixed(1)}`.padStart(14)}   (${checkouts[i].dir}${checkouts[i].unix ? ', over the Unix socket' : ''})`,
    );
    return { ...row, rate: n / seconds };
  });
  if (per.length === 2) {
    const [a, b] = per;
    console.log(
      `per send, this / against: Hub CPU ${(a.ms / b.ms).toFixed(3)}, DB CPU ${(a.dbMs / b.dbMs).toFixed(3)}, round trips ${(a.trips / b.trips).toFixed(3)}; sends/s ${(a.rate / b.rate).toFixed(3)}`,
    );
  }
  for (const { hub } of hubs) {
    for (const s of hub.streams) s.stop();
    hub.send.close();
  }
} finally {
  for (const { hub } of hubs) await hub.stop();
  await db.end();
}
