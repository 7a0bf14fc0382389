// Drain a burst: N entries queued at the Hub before the consumer starts, drained over SSE
// into the spool (verify, append + fsync, ledger, seen-jti, ack delivered). Prints entries/s
// and fsyncs per entry (every fsyncSync the consumer process makes, counted by a preload).
// Target (issue 4): ≥ 2,000 entries/s. Issue 19: the first record of a backlog of any size
// within one round trip + one fsync (the Hub pages by keyset as the socket drains), so it also
// prints the time to the first record and the Hub's CPU and peak RSS during the drain.
// Needs `npm run build`. Never run by CI.
//   node bench/consumer-drain.mjs [--entries 10000] [--concurrency 32]
import { spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync, readSync, fstatSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { sessionStateDir, stateKey } from '../dist/spool/index.js';
import { ensureDir } from '../dist/util/fs-durable.js';
import { agentEnv, bin, procStats, startHub, until, watchRss } from './bridge-world.mjs';

const arg = (name, fallback) => {
  const i = process.argv.indexOf(name);
  return i === -1 ? fallback : Number(process.argv[i + 1]);
};
const ENTRIES = arg('--entries', 10_000);
const CONCURRENCY = arg('--concurrency', 32);

// Counts fsyncSync calls in the consumer; ESM named imports of node:fs see the wrapper after syncBuiltinESMExports.
const COUNT_FSYNCS =
  'data:text/javascript,' +
  encodeURIComponent(
    'import fs from "node:fs"; import { syncBuiltinESMExports } from "node:module";' +
      'let n = 0; const orig = fs.fsyncSync; fs.fsyncSync = (fd) => { n++; return orig(fd); }; syncBuiltinESMExports();' +
      'process.on("exit", () => fs.writeFileSync(process.env.OH_HAI_BENCH_FSYNC_OUT, String(n)));',
  );

/** The seq of the last complete line, reading only the file's tail. */
function lastSeq(file) {
  let fd;
  try {
    fd = openSync(file, 'r');
  } catch {
    return 0;
  }
  try {
    const size = fstatSync(fd).size;
    const len = Math.min(size, 256 * 1024);
    const buf = Buffer.alloc(len);
    readSync(fd, buf, 0, len, size - len);
    const lines = buf.toString('utf8').split('\n');
    const last = lines[lines.length - 2];
    return last ? JSON.parse(last).seq : 0;
  } catch {
    return 0;
  } finally {
    closeSync(fd);
  }
}

const hub = await startHub([]);
const me = await hub.mint('drain-bench');
const peer = await hub.mint('drain-peer');
const { env, tmp } = agentEnv(hub.url, me, 'drain');
const dir = sessionStateDir(env.XDG_STATE_HOME, stateKey(hub.url, me.id, 'drain'));
const fsyncOut = path.join(tmp, 'fsyncs');
let consumer = null;
try {
  ensureDir(dir);
  const settings = {
    hub: hub.url,
    agent_id: me.id,
    session_key: 'drain',
    pinned: null,
    name: 'drain-bench',
    transport: 'auto',
    interval_seconds: 5,
    max_retries: 8,
    unattended_max_seconds: 900,
    allow_from: null,
    agent: null,
    leg: 'session',
  };
  writeFileSync(path.join(dir, 'settings.json'), JSON.stringify(settings) + '\n', { mode: 0o600 });

  // Queue the burst at the principal address: the session claims it on connect (first-claim-wins).
  const q0 = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < ENTRIES) {
        const i = next++;
        await hub.call(peer.token, 'POST', '/v1/messages', { to: `agent:${me.id}`, intent: 'notify', text: `burst ${i} ${'x'.repeat(120)}` });
      }
    }),
  );
  console.log(`queued ${ENTRIES} entries in ${((performance.now() - q0) / 1000).toFixed(1)} s`);

  const spool = path.join(dir, 'bridge.ndjson');
  const hubBefore = procStats(hub.pid);
  const rss = watchRss(hub.pid);
  const t0 = performance.now();
  // The same node flags the bridge starts its connection with.
  const { CONSUMER_NODE_FLAGS } = await import('../dist/reader/consumer-flags.js');
  consumer = spawn(process.execPath, [...CONSUMER_NODE_FLAGS, '--import', COUNT_FSYNCS, bin, '__consumer', '--entry', dir], {
    env: { ...env, OH_HAI_BENCH_FSYNC_OUT: fsyncOut },
    stdio: 'ignore',
  });
  await until(() => lastSeq(spool) >= 1, 'the first record', 60_000);
  const tFirst = performance.now();
  await until(() => lastSeq(spool) >= ENTRIES, `${ENTRIES} records`, 600_000);
  const tLast = performance.now();
  const hubAfter = procStats(hub.pid);
  const peakRss = rss.stop();
  consumer.kill('SIGTERM');
  await new Promise((r) => consumer.once('exit', r));
  const fsyncs = Number(readFileSync(fsyncOut, 'utf8'));
  const records = readFileSync(spool, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
  const firstAt = Date.parse(records[0].received_at);
  const lastAt = Date.parse(records[records.length - 1].received_at);
  const drainS = (tLast - tFirst) / 1000;
  console.log(`spooled ${records.length} entries (${new Set(records.map((r) => r.entry.id)).size} distinct)`);
  console.log(`time to the first record:      ${(tFirst - t0).toFixed(0)} ms from spawn (includes start-up, capability, session register)`);
  console.log(
    `from spawn to the last record: ${((tLast - t0) / 1000).toFixed(2)} s → ${(ENTRIES / ((tLast - t0) / 1000)).toFixed(0)} entries/s (includes start-up, capability, session register)`,
  );
  console.log(
    `first to last record:          ${drainS.toFixed(2)} s → ${(ENTRIES / drainS).toFixed(0)} entries/s (received_at span ${((lastAt - firstAt) / 1000).toFixed(2)} s)`,
  );
  if (hubBefore && hubAfter) {
    const cpu = hubAfter.cpuMs - hubBefore.cpuMs;
    console.log(
      `Hub during the drain:          CPU ${(cpu / 1000).toFixed(2)} s (${((cpu / (tLast - t0)) * 100).toFixed(0)} % of one core), RSS ${hubBefore.rssMiB.toFixed(0)} MiB before, peak ${peakRss.toFixed(0)} MiB`,
    );
  }
  console.log(`fsyncs: ${fsyncs} in the consumer's whole run → ${(fsyncs / ENTRIES).toFixed(3)} per entry (target ≥ 2,000 entries/s)`);
} finally {
  if (consumer && consumer.exitCode === null) consumer.kill('SIGKILL');
  await hub.stop();
  rmSync(tmp, { recursive: true, force: true });
}
