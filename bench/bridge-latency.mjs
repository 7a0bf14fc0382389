// End-to-end latency over SSE: a peer's send answered 202 → the waiting reader's printed
// line (Hub push → consumer verify, spool append → fs.watch → reader prints; the spool's
// fsync and the ledger run beside the reader, not before it). Each sample starts a fresh
// reader and sends once it is idle in its wait. Targets (issue 5): p50 ≤ 15 ms, p99 ≤ 50 ms.
// Findings: docs/performance.md. Needs `npm run build`. Never run by CI.
//   node bench/bridge-latency.mjs [--samples 100]
import { spawn } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { sessionEntryDir, stateKey } from '../dist/spool/index.js';
import { agentEnv, bin, percentile, startHub, timed, until } from './bridge-world.mjs';

const i = process.argv.indexOf('--samples');
const SAMPLES = i === -1 ? 100 : Number(process.argv[i + 1]);

const hub = await startHub();
const receiver = await hub.mint('latency-receiver');
const sender = await hub.mint('latency-sender');
const { env, tmp } = agentEnv(hub.url, receiver, 'latency');
const dir = sessionEntryDir(env.XDG_STATE_HOME, stateKey(hub.url, receiver.id, 'latency'));
/**
 * The reader is idle in its wait: on Linux, asleep with its CPU time unchanged over 10 ms
 * (it has claimed the entry, printed nothing and armed its watch); elsewhere, 50 ms after
 * it claimed the entry. A send before that would time the reader's own start-up.
 */
const cpuOf = (pid) => {
  try {
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return { state: f[0], ticks: Number(f[11]) + Number(f[12]) };
  } catch {
    return null;
  }
};
async function idle(pid) {
  if (cpuOf(process.pid) === null) return new Promise((r) => setTimeout(r, 50));
  let last = cpuOf(pid);
  for (;;) {
    await new Promise((r) => setTimeout(r, 10));
    const now = cpuOf(pid);
    if (now === null || (now.state === 'S' && last?.state === 'S' && now.ticks === last.ticks)) return;
    last = now;
  }
}
const readJson = (name) => {
  try {
    return JSON.parse(readFileSync(path.join(dir, name), 'utf8'));
  } catch {
    return null;
  }
};

try {
  await timed(process.execPath, [bin, 'bridge', '--wait', '0'], env);
  const session = (await until(() => readJson('session.json'), 'the session')).id;
  await until(() => readJson('consumer.json')?.state === 'running', 'the connection to run');
  const to = `agent:${receiver.id}#${session}`;
  const latencies = [];
  for (let n = 0; n < SAMPLES; n++) {
    const reader = spawn(process.execPath, [bin, 'bridge', '--wait', '30'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    reader.stderr.setEncoding('utf8').on('data', (d) => (stderr += d));
    const marker = `latency sample ${n}`;
    const printed = new Promise((resolve) => {
      let out = '';
      reader.stdout.setEncoding('utf8').on('data', (d) => {
        out += d;
        if (out.includes(marker)) resolve(performance.now());
      });
    });
    let gone = false;
    const exited = new Promise((r) => reader.once('exit', r)).then(() => (gone = true));
    // Measure the steady state: the reader has claimed the entry and is waiting.
    await until(() => gone || readJson('reader.json')?.pid === reader.pid, 'the reader to wait');
    if (gone) throw new Error(`sample ${n}: the reader exited before the send:\n${stderr}`);
    await idle(reader.pid);
    await hub.call(sender.token, 'POST', '/v1/messages', { to, intent: 'notify', text: marker });
    const t0 = performance.now();
    const t1 = await printed;
    latencies.push(t1 - t0);
    await exited;
  }
  const f = (p) => `${percentile(latencies, p).toFixed(1)} ms`;
  console.log(
    `send 202 → printed line, ${SAMPLES} samples over SSE: p50 ${f(50)}, p90 ${f(90)}, p99 ${f(99)}, max ${f(100)} (targets: p50 ≤ 15 ms, p99 ≤ 50 ms)`,
  );
} finally {
  const c = readJson('consumer.json');
  if (c) {
    try {
      process.kill(c.pid, 'SIGTERM');
    } catch {
      // already gone
    }
  }
  await hub.stop();
  rmSync(tmp, { recursive: true, force: true });
}
