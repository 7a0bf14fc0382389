// The spool stops growing (issue 18, docs/spool.md): a million records through one agent
// session, with disk use and the warm bridge run measured at intervals beside the first
// interval's figures (the baseline, measured in the same run).
//
// How the records get there: NOT a million sends through a Hub (hours on a shared machine).
// The bench writes them through the consumer's own drain state (dist/consumer/state.js:
// Spool.append in batches of 100, the ledger, the settled mark, compaction after each batch,
// retain_printed at its default), acting as reader and Hub in between: each batch is marked
// printed (cursor) and acknowledged (ledger), as a reader and the Hub would. What is timed is
// real: at each interval the real background connection is started on that entry by
// `oh-hai bridge` (its start reads the spool: the cost that used to grow with it), and then
// `oh-hai bridge --wait 0` prints the 100 records left waiting, warm, `--runs` times.
// Needs `npm run build`. Never run by CI. The machine may be shared: compare within a run.
//   node bench/spool-growth.mjs [--records 1000000] [--every 100000] [--runs 5]
import { readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { openDrainState } from '../dist/consumer/state.js';
import { openStateDir, sessionStateDir, stateKey } from '../dist/spool/index.js';
import { agentEnv, bin, percentile, startHub, timed, until } from './bridge-world.mjs';

const arg = (name, fallback) => {
  const i = process.argv.indexOf(name);
  return i === -1 ? fallback : Number(process.argv[i + 1]);
};
const RECORDS = arg('--records', 1_000_000);
const EVERY = arg('--every', 100_000);
const RUNS = arg('--runs', 5);
const BATCH = 100;
/** The last batch of each interval stays unprinted: what each warm run prints. */
const WAITING = BATCH;
const DEFAULT_RETAIN = { records: 10_000, days: 7, bytes: 64 * 2 ** 20 };

const hub = await startHub(['--stream-max-hold-seconds', '30']);
const agent = await hub.mint('growth-bench');
const { env, tmp } = agentEnv(hub.url, agent, 'growth');
const dir = sessionStateDir(env.XDG_STATE_HOME, stateKey(hub.url, agent.id, 'growth'));
const clock = { now: () => Date.now(), monotonic: () => performance.now() };

const readJson = (name) => {
  try {
    return JSON.parse(readFileSync(path.join(dir, name), 'utf8'));
  } catch {
    return null;
  }
};

/** Stop the background connection (if one runs) and wait until it has recorded its stop. */
async function stopConnection() {
  const c = readJson('consumer.json');
  if (!c || c.state === 'stopped') return;
  try {
    process.kill(c.pid, 'SIGTERM');
  } catch {
    return;
  }
  await until(() => readJson('consumer.json')?.state === 'stopped', 'the connection to stop', 60_000);
}

function diskUse() {
  let bytes = 0;
  let segments = 0;
  for (const name of readdirSync(dir)) {
    bytes += statSync(path.join(dir, name)).size;
    if (/^bridge(\.\d+)?\.ndjson$/.test(name)) segments += 1;
  }
  return { bytes, segments };
}

try {
  // The first run makes the entry and starts the connection; its session addresses the records.
  await timed(process.execPath, [bin, 'bridge', '--wait', '0'], env);
  const session = await until(() => readJson('session.json')?.id, 'the session');
  await stopConnection();
  const opened = openStateDir(dir, { create: false });
  if (!opened.ok) throw new Error(opened.reason);
  const entry = opened.value;

  let written = 0;
  let baseline = null;
  const rows = [];
  console.log(
    `spool growth: ${RECORDS} records in batches of ${BATCH}, retain_printed ${DEFAULT_RETAIN.records} records / ${DEFAULT_RETAIN.days} days / 64 MiB; figures every ${EVERY}`,
  );
  while (written < RECORDS) {
    const t0 = performance.now();
    const state = openDrainState(entry, clock, () => {}, { leg: 'session', retain: DEFAULT_RETAIN });
    if (!state.ok) throw new Error(state.stop.message);
    const openMs = performance.now() - t0;
    const { spool, ledger } = state.value;
    const goal = Math.min(RECORDS, written + EVERY);
    const t1 = performance.now();
    while (written < goal) {
      // the interval's last batch is what the warm runs print: it stays unprinted
      const waiting = written + BATCH >= goal;
      const batch = [];
      for (let i = 0; i < BATCH && written < goal; i++, written++) {
        const id = `ent_growth_${written}`;
        const text = `growth record ${written} ${'x'.repeat(200)}`;
        batch.push({
          type: 'entry',
          session,
          entry: { id, kind: 'directive', from: 'human:h_bench', to: `agent:${agent.id}#${session}`, created_at: new Date().toISOString(), text },
          signature: `t=${Math.floor(Date.now() / 1000)},jti=growth${String(written).padStart(12, '0')},alg=hmac-sha256,v1=${'0'.repeat(64)}`,
        });
      }
      const records = spool.append(batch);
      ledger.recordSpooled(records.map((r) => ({ id: r.entry.id, seq: r.seq, session: r.session })));
      ledger.cover(spool.lastSeq());
      if (!waiting) {
        // the reader printed the batch (its cursor: the current segment's end) and the Hub acknowledged it
        entry.writeCursor({ seq: spool.lastSeq(), offset: spool.end() });
        ledger.acknowledge(ledger.needsAcknowledged(spool.lastSeq()).map((e) => e.id));
      }
      state.value.compact(clock.now(), 300);
    }
    const appendS = (performance.now() - t1) / 1000;
    state.value.close();

    // The real connection starts on this entry (its start reads the spool), then warm runs.
    const cursor = entry.readCursor();
    const started = performance.now();
    await timed(process.execPath, [bin, 'bridge', '--wait', '0'], env);
    await until(() => readJson('consumer.json')?.state === 'running', 'the connection to run', 120_000);
    const startMs = performance.now() - started;
    const warm = [];
    for (let r = 0; r < RUNS; r++) {
      writeFileSync(path.join(dir, 'cursor.json'), JSON.stringify(cursor) + '\n', { mode: 0o600 });
      let lines = 0;
      const run = await timed(process.execPath, [bin, 'bridge', '--wait', '0'], env, (d) => (lines += d.toString().split('\n').length - 1));
      if (run.code !== 0 || lines !== WAITING) throw new Error(`the warm run exited ${run.code} after ${lines} lines (expected ${WAITING})`);
      warm.push(run.ms);
    }
    await stopConnection();
    const disk = diskUse();
    const row = { written, bytes: disk.bytes, segments: disk.segments, openMs, startMs, warmMs: percentile(warm, 50), appendPerS: EVERY / appendS };
    baseline ??= row;
    rows.push(row);
    const ratio = (a, b) => `${(a / b).toFixed(2)}×`;
    console.log(
      `${String(written).padStart(8)} records: entry ${(row.bytes / 1048576).toFixed(1)} MiB in ${row.segments} spool files (${ratio(row.bytes, baseline.bytes)} baseline)` +
        ` · drain-state open ${row.openMs.toFixed(1)} ms (${ratio(row.openMs, baseline.openMs)})` +
        ` · connection start→running ${row.startMs.toFixed(0)} ms (${ratio(row.startMs, baseline.startMs)})` +
        ` · warm bridge p50 ${row.warmMs.toFixed(1)} ms (${ratio(row.warmMs, baseline.warmMs)})` +
        ` · append ${row.appendPerS.toFixed(0)} records/s`,
    );
  }
  const lastRow = rows.at(-1);
  console.log(
    `after ${lastRow.written} records: disk ${(lastRow.bytes / 1048576).toFixed(1)} MiB vs ${(baseline.bytes / 1048576).toFixed(1)} MiB at ${baseline.written}; ` +
      `warm run p50 ${lastRow.warmMs.toFixed(1)} ms vs ${baseline.warmMs.toFixed(1)} ms; the spool a single file would have been ~${((lastRow.written * (baseline.bytes / baseline.written)) / 1048576).toFixed(0)} MiB`,
  );
} finally {
  await stopConnection().catch(() => {});
  await hub.stop();
  rmSync(tmp, { recursive: true, force: true });
}
