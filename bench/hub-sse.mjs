// SSE push latency of the reference Hub: N concurrent streams (default 500) on one Hub on
// loopback, M messages (default 1000) sent to random sessions, at most C sends in flight over
// kept-alive connections (bench/sender.mjs). Prints sends/s and the Hub's CPU per send (issue 19:
// ≥ 1,500/s with 5,000 streams open), send→push latency p50/p95/p99/max and the Hub's RSS.
// Needs `npm run build` first.
// Never run by CI. Usage: node bench/hub-sse.mjs [--sessions 500] [--messages 1000] [--concurrency 10]
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { holdStream, pushTimer } from './hub-streams.mjs';
import { keepAliveCaller } from './sender.mjs';

const arg = (name, dflt) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
};
const SESSIONS = arg('sessions', 500);
const MESSAGES = arg('messages', 1000);
const CONCURRENCY = arg('concurrency', 10);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

const dir = mkdtempSync(path.join(os.tmpdir(), 'oh-hai-bench-hub-'));
const hub = spawn(process.execPath, [path.join(root, 'bin', 'oh-hai'), 'hub', 'serve', '--port', '0', '--data', dir], {
  env: { ...process.env, MA2H_SIGNING_KEY: 'bench-key' },
  stdio: ['ignore', 'pipe', 'inherit'],
});
// However the bench ends (a failed call, ^C), its Hub and data directory go with it.
const cleanUp = () => {
  hub.kill('SIGTERM');
  rmSync(dir, { recursive: true, force: true });
};
process.once('exit', cleanUp);
process.once('SIGINT', () => process.exit(130));
const url = await new Promise((resolve, reject) => {
  let out = '';
  hub.stdout.setEncoding('utf8').on('data', (d) => {
    out += d;
    const m = /hub: listening on (\S+)/.exec(out);
    if (m) resolve(m[1]);
  });
  hub.once('exit', (code) => reject(new Error(`hub exited ${code}`)));
});
const human = readFileSync(path.join(dir, 'human-token'), 'utf8').trim();

function call(method, p, token, body) {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : JSON.stringify(body);
    const req = request(url + p, { method, agent: false, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' } }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (d) => (text += d));
      // A connection reset mid-answer is this call's failure, not the process's.
      res.on('error', reject);
      res.on('end', () => (res.statusCode >= 400 ? reject(new Error(`${method} ${p} ${res.statusCode} ${text}`)) : resolve(JSON.parse(text))));
    });
    req.on('error', reject);
    req.end(data);
  });
}

const rssKb = () => {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${hub.pid}/status`, 'utf8'));
  return m ? Number(m[1]) : NaN;
};

// Mint one agent per session (the Hub allows 16 live sessions per agent) and a sender.
const sender = await call('POST', '/v1/account/agents', human, { label: 'bench-sender' });
const sessions = [];
for (let i = 0; i < SESSIONS; i++) {
  const a = await call('POST', '/v1/account/agents', human, { label: `bench-${i}` });
  const s = await call('POST', '/v1/sessions', a.token, { client_key: `bench-${i}` });
  sessions.push({ token: a.token, id: s.session.id, address: s.session.address });
}

const timer = pushTimer();
let connects = 0;
let opened = 0;
const rssIdle = rssKb();
for (const s of sessions) holdStream({ ...s, url }, timer, { onOpen: () => opened++, onConnect: () => connects++ });
while (opened < SESSIONS) await new Promise((r) => setTimeout(r, 20));
const rssOpen = rssKb();

/** The Hub's CPU time so far (user + system, ms; USER_HZ is 100 here). */
const hubCpuMs = () => {
  const f = readFileSync(`/proc/${hub.pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(f[11]) + Number(f[12])) * 10;
};
const send = keepAliveCaller(url, CONCURRENCY);
let next = 0;
const cpu0 = hubCpuMs();
const t0 = performance.now();
async function worker() {
  while (next < MESSAGES) {
    next++;
    const s = sessions[Math.floor(Math.random() * sessions.length)];
    const start = performance.now();
    const r = await send(sender.token, 'POST', '/v1/messages', { to: s.address, intent: 'notify', text: `bench ${next}` });
    timer.sent(r.message.id, start);
  }
}
await Promise.all(Array.from({ length: CONCURRENCY }, worker));
const sendS = (performance.now() - t0) / 1000;
const sendCpu = hubCpuMs() - cpu0;
send.close();
const latencies = timer.latencies;
while (latencies.length < MESSAGES && performance.now() - t0 < 120_000) await new Promise((r) => setTimeout(r, 20));
const elapsed = (performance.now() - t0) / 1000;

latencies.sort((a, b) => a - b);
const pct = (p) => latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))].toFixed(1);
console.log(`sessions ${SESSIONS} (streams open), messages ${MESSAGES} (${CONCURRENCY} in flight), ${latencies.length} pushes seen in ${elapsed.toFixed(1)} s`);
console.log(
  `sends: ${MESSAGES} in ${sendS.toFixed(2)} s → ${(MESSAGES / sendS).toFixed(0)} sends/s with ${SESSIONS} streams open; Hub CPU ${(sendCpu / MESSAGES).toFixed(3)} ms per send (push included)`,
);
console.log(`send→push latency ms: p50 ${pct(50)}  p95 ${pct(95)}  p99 ${pct(99)}  max ${latencies[latencies.length - 1].toFixed(1)}`);
console.log(
  `hub RSS: ${(rssIdle / 1024).toFixed(0)} MiB before streams, ${(rssOpen / 1024).toFixed(0)} MiB with ${SESSIONS} open, ${(rssKb() / 1024).toFixed(0)} MiB after the sends`,
);
console.log(`stream connects: ${connects} (reconnects on the 30 s hold bound included)`);

hub.kill('SIGTERM');
await new Promise((r) => hub.once('exit', r));
process.exit(0);
