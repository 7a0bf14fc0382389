// What the benches' load generator costs itself: this checkout's bench/sender.mjs and
// bench/hub-streams.mjs against another checkout's, in the same run. One SQLite Hub (this
// checkout's); two child processes, one per load generator, each holding S streams (short hold, so
// they reconnect often) and then sending at C in flight to its own streams' sessions, both at the
// same time, so both see the same machine and the same Hub. Per child: its own CPU (user + system)
// per stream connect with nothing sent, and per send (every push seen) with its streams held.
// Never run by CI.
// Usage: node bench/load-cost.mjs --against <other checkout> [--streams 300] [--hold 2] [--seconds 15] [--sends 3000] [--concurrency 25]
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { hubReady } from './bridge-world.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const opt = (name, dflt) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : dflt;
};

if (process.argv[2] === '--child') {
  // One load generator: the checkout's own modules, a job on stdin, figures on stdout.
  const checkout = process.argv[3];
  const job = JSON.parse(readFileSync(0, 'utf8'));
  const { keepAliveCaller } = await import(pathToFileURL(path.join(checkout, 'bench', 'sender.mjs')).href);
  const { holdStream, pushTimer } = await import(pathToFileURL(path.join(checkout, 'bench', 'hub-streams.mjs')).href);
  const timer = pushTimer();
  let connects = 0;
  let opened = 0;
  const streams = job.sessions.map((s) =>
    holdStream({ url: job.url, id: s.id, token: s.token }, timer, { onOpen: () => opened++, onConnect: () => connects++ }),
  );
  while (opened < streams.length) await new Promise((r) => setTimeout(r, 20));
  const cpu = () => {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1000;
  };
  // Both children are told when to start each phase (a line on stdin would need the job closed): a shared clock.
  const until = (t) => new Promise((r) => setTimeout(r, Math.max(0, t - Date.now())));
  await until(job.idleAt);
  const [c0, n0] = [cpu(), connects];
  await until(job.idleAt + job.seconds * 1000);
  const idleMs = cpu() - c0;
  const idleConnects = connects - n0;
  await until(job.sendAt);
  const call = keepAliveCaller(job.url, job.concurrency);
  const c1 = cpu();
  let next = 0;
  await Promise.all(
    Array.from({ length: job.concurrency }, async () => {
      while (next < job.sends) {
        const n = next++;
        const s = job.sessions[n % job.sessions.length];
        const start = performance.now();
        const r = await call(job.senderToken, 'POST', '/v1/messages', { to: s.address, intent: 'notify', text: `load ${n}` });
        timer.sent(r.message.id, start);
      }
    }),
  );
  while (timer.latencies.length < job.sends) await new Promise((r) => setTimeout(r, 5));
  const sendMs = cpu() - c1;
  for (const s of streams) s.stop();
  call.close();
  process.stdout.write(JSON.stringify({ idleMs, idleConnects, sendMs, seen: timer.latencies.length }));
  process.exit(0);
}

const against = opt('against', null);
if (against === null)
  throw new Error('usage: node bench/load-cost.mjs --against <other checkout> [--streams 300] [--hold 2] [--seconds 15] [--sends 3000] [--concurrency 25]');
const STREAMS = Number(opt('streams', 300));
const HOLD = Number(opt('hold', 2));
const SECONDS = Number(opt('seconds', 15));
const SENDS = Number(opt('sends', 3000));
const CONCURRENCY = Number(opt('concurrency', 25));

const data = mkdtempSync(path.join(os.tmpdir(), 'oh-hai-bench-load-'));
const hub = spawn(
  process.execPath,
  [path.join(root, 'bin', 'oh-hai'), 'hub', 'serve', '--port', '0', '--data', data, '--stream-max-hold-seconds', String(HOLD)],
  {
    env: { ...process.env, MA2H_SIGNING_KEY: 'load-cost' },
    stdio: ['ignore', 'pipe', 'inherit'],
  },
);
try {
  const url = await hubReady(hub);
  const human = readFileSync(path.join(data, 'human-token'), 'utf8').trim();
  const post = async (token, p, body) => {
    const res = await fetch(url + p, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (!res.ok) throw new Error(`${p} → ${res.status} ${await res.text()}`);
    return res.json();
  };
  const sender = await post(human, '/v1/account/agents', { label: 'load-sender' });
  // 16 live sessions per agent at most.
  const sessions = [];
  for (let i = 0; i < 2 * STREAMS; i += 16) {
    const a = await post(human, '/v1/account/agents', { label: `load-${i}` });
    for (let j = i; j < Math.min(2 * STREAMS, i + 16); j++) {
      const s = (await post(a.token, '/v1/sessions', { client_key: `l-${j}` })).session;
      sessions.push({ id: s.id, address: s.address, token: a.token });
    }
  }
  // Streams open and settle for two holds, then the idle window, then the sends.
  const idleAt = Date.now() + 2 * HOLD * 1000 + 5000;
  const sendAt = idleAt + SECONDS * 1000 + 500;
  const builds = [
    { label: 'this', dir: root },
    { label: 'against', dir: path.resolve(against) },
  ];
  const results = await Promise.all(
    builds.map(
      (b, i) =>
        new Promise((resolve, reject) => {
          const child = spawn(process.execPath, [fileURLToPath(import.meta.url), '--child', b.dir], { stdio: ['pipe', 'pipe', 'inherit'] });
          let out = '';
          child.stdout.on('data', (d) => (out += d));
          child.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`${b.label}: exited ${code}`))));
          child.stdin.end(
            JSON.stringify({
              url,
              senderToken: sender.token,
              sessions: sessions.slice(i * STREAMS, (i + 1) * STREAMS),
              idleAt,
              sendAt,
              seconds: SECONDS,
              sends: SENDS,
              concurrency: CONCURRENCY,
            }),
          );
        }),
    ),
  );
  console.log(
    `load-cost: ${STREAMS} streams per load generator (hold ${HOLD} s), idle ${SECONDS} s, then ${SENDS} sends at ${CONCURRENCY} in flight each, both at once; load average ${os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}`,
  );
  console.log('generator  connects  CPU ms/connect  sends (pushes seen)  CPU ms/send (streams held)');
  for (const [i, r] of results.entries())
    console.log(
      `${builds[i].label.padEnd(9)}  ${String(r.idleConnects).padStart(8)}  ${(r.idleMs / r.idleConnects).toFixed(3).padStart(14)}  ${`${SENDS} (${r.seen})`.padStart(19)}  ${(r.sendMs / SENDS).toFixed(3).padStart(26)}   (${builds[i].dir})`,
    );
  const [a, b] = results;
  console.log(
    `this / against: CPU per connect ${(a.idleMs / a.idleConnects / (b.idleMs / b.idleConnects)).toFixed(3)}, CPU per send ${(a.sendMs / b.sendMs).toFixed(3)}`,
  );
} finally {
  hub.kill('SIGTERM');
  await new Promise((r) => (hub.exitCode !== null ? r() : hub.once('exit', r)));
  rmSync(data, { recursive: true, force: true });
}
process.exit(0);
