// The consumer at rest: a minute of SSE holds with no mail (production hold 30 s and
// keep-alive 15 s unless told otherwise). Samples the consumer's RSS and CPU time from
// /proc (Linux). Targets (issue 4): idle RSS ≤ 60 MiB, idle CPU ≤ 1 %. Needs `npm run build`.
// Never run by CI.
//   node bench/consumer-idle.mjs [--seconds 60] [--hold 30] [--keepalive 15]
import { spawn } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { sessionStateDir, stateKey } from '../dist/spool/index.js';
import { ensureDir } from '../dist/util/fs-durable.js';
import { agentEnv, bin, startHub, until } from './bridge-world.mjs';

const arg = (name, fallback) => {
  const i = process.argv.indexOf(name);
  return i === -1 ? fallback : Number(process.argv[i + 1]);
};
const SECONDS = arg('--seconds', 60);
const HOLD = arg('--hold', 30);
const KEEPALIVE = arg('--keepalive', 15);
const CLK_TCK = 100; // USER_HZ on Linux

const cpuTicks = (pid) => {
  // utime + stime: fields 14 and 15, counted after the ')' that ends the command name.
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(f[11]) + Number(f[12]);
};
const rssMiB = (pid) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) / 1024;

const hub = await startHub(['--stream-max-hold-seconds', String(HOLD), '--keepalive-seconds', String(KEEPALIVE)]);
const me = await hub.mint('idle-bench');
const { env, tmp } = agentEnv(hub.url, me, 'idle');
const dir = sessionStateDir(env.XDG_STATE_HOME, stateKey(hub.url, me.id, 'idle'));
let consumer = null;
try {
  ensureDir(dir);
  const settings = {
    hub: hub.url,
    agent_id: me.id,
    session_key: 'idle',
    pinned: null,
    name: 'idle-bench',
    transport: 'auto',
    interval_seconds: 5,
    max_retries: 8,
    unattended_max_seconds: 900,
    allow_from: null,
    agent: null,
    leg: 'session',
  };
  writeFileSync(path.join(dir, 'settings.json'), JSON.stringify(settings) + '\n', { mode: 0o600 });
  // The same node flags the bridge starts its connection with.
  const { CONSUMER_NODE_FLAGS } = await import('../dist/reader/consumer-flags.js');
  consumer = spawn(process.execPath, [...CONSUMER_NODE_FLAGS, bin, '__consumer', '--entry', dir], { env, stdio: 'ignore' });
  await until(() => {
    try {
      return JSON.parse(readFileSync(path.join(dir, 'consumer.json'), 'utf8')).state === 'running';
    } catch {
      return false;
    }
  }, 'the consumer running');
  // Let start-up settle before measuring rest.
  await new Promise((r) => setTimeout(r, 2000));
  const pid = consumer.pid;
  const t0 = performance.now();
  const c0 = cpuTicks(pid);
  const rss = [rssMiB(pid)];
  while (performance.now() - t0 < SECONDS * 1000) {
    await new Promise((r) => setTimeout(r, 1000));
    rss.push(rssMiB(pid));
  }
  const wallS = (performance.now() - t0) / 1000;
  const cpuS = (cpuTicks(pid) - c0) / CLK_TCK;
  const session = JSON.parse(readFileSync(path.join(dir, 'session.json'), 'utf8'));
  console.log(
    `${wallS.toFixed(0)} s of SSE holds (hold ${HOLD} s, keep-alive ${KEEPALIVE} s); lease last renewed ${((Date.now() - session.renewed_at) / 1000).toFixed(1)} s ago`,
  );
  console.log(`RSS: start ${rss[0].toFixed(1)} MiB, max ${Math.max(...rss).toFixed(1)} MiB, end ${rss[rss.length - 1].toFixed(1)} MiB (target ≤ 60 MiB)`);
  console.log(`CPU: ${cpuS.toFixed(2)} s over ${wallS.toFixed(0)} s → ${((100 * cpuS) / wallS).toFixed(2)} % of one core (target ≤ 1 %)`);
} finally {
  if (consumer && consumer.exitCode === null) {
    consumer.kill('SIGTERM');
    await new Promise((r) => consumer.once('exit', r));
  }
  await hub.stop();
  rmSync(tmp, { recursive: true, force: true });
}
