// Drain a burst: N entries queued at the Hub before the consumer starts, drained over SSE
// into the spool (verify, append + fsync, ledger, seen-jti, ack delivered). Prints entries/s
// and fsyncs per entry (every fsyncSync the consumer process makes, counted by a preload).
// Target (issue 4): ≥ 2,000 entries/s. Issue 19: the Hub queues ≥ 2,500 sends/s at 32 in
// flight (the queue phase prints sends/s and the Hub's CPU per send; the sender is node:http
// with kept-alive connections, bench/sender.mjs), and the first record of a backlog of any size
// leaves within 100 ms of the connection's start (the Hub pages by keyset as the socket drains):
// the bench times a drain of the backlog's first page from its request, then the consumer drains
// it all (its first record from spawn includes Node's start-up).
// Also the Hub's CPU and peak RSS during the drain. Needs `npm run build`. Never run by CI.
//   node bench/consumer-drain.mjs [--entries 10000] [--concurrency 32]
import { spawn } from 'node:child_process';
import { closeSync, openSync, readdirSync, readFileSync, readSync, fstatSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { sessionStateDir, stateKey } from '../dist/spool/index.js';
import { ensureDir } from '../dist/util/fs-durable.js';
import { agentEnv, bin, procStats, startHub, until, watchRss } from './bridge-world.mjs';
import { keepAliveCaller } from './sender.mjs';

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
  const send = keepAliveCaller(hub.url, CONCURRENCY);
  const queueBefore = procStats(hub.pid);
  const q0 = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < ENTRIES) {
        const i = next++;
        await send(peer.token, 'POST', '/v1/messages', { to: `agent:${me.id}`, intent: 'notify', text: `burst ${i} ${'x'.repeat(120)}` });
      }
    }),
  );
  const queueS = (performance.now() - q0) / 1000;
  const queueAfter = procStats(hub.pid);
  send.close();
  const queueCpu = queueBefore && queueAfter ? `; Hub CPU ${((queueAfter.cpuMs - queueBefore.cpuMs) / ENTRIES).toFixed(3)} ms per send` : '';
  console.log(
    `queued ${ENTRIES} entries in ${queueS.toFixed(2)} s → ${(ENTRIES / queueS).toFixed(0)} sends/s at ${CONCURRENCY} in flight${queueCpu} (target ≥ 2,500/s)`,
  );

  // The first page of the backlog: a drain of the principal mailbox (`GET /v1/inbox`, the same
  // keyset page read and signing as a stream's page) timed from its request to its answer. A
  // principal drain claims nothing, so the consumer below still drains the whole backlog.
  const d0 = performance.now();
  const page = await hub.call(me.token, 'GET', '/v1/inbox?limit=100');
  const firstPageMs = performance.now() - d0;
  if (page.messages.length === 0) throw new Error('the backlog drain answered no entry');
  console.log(
    `first record of the backlog:   ${firstPageMs.toFixed(1)} ms from a drain's request to its answer, ${page.messages.length} entries (target ≤ 100 ms)`,
  );

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
  // Every segment: the spool seals a segment every 1,000 records (docs/spool.md).
  const records = readdirSync(dir)
    .filter((f) => /^bridge\.(\d+\.)?ndjson$/.test(f))
    .flatMap((f) => readFileSync(path.join(dir, f), 'utf8').split('\n').filter(Boolean))
    .map((l) => JSON.parse(l))
    .sort((a, b) => a.seq - b.seq);
  const firstAt = Date.parse(records[0].received_at);
  const lastAt = Date.parse(records[records.length - 1].received_at);
  const drainS = (tLast - tFirst) / 1000;
  console.log(`spooled ${records.length} records (${new Set(records.map((r) => r.entry?.id)).size} distinct entries)`);
  console.log(`consumer's first record:       ${(tFirst - t0).toFixed(0)} ms from spawn (includes Node's start-up, capability, session register)`);
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
