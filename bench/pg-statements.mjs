// The database's work per send and per stream connect, by statement: issue 14's bench
// (bench/hub-cluster.mjs, its arguments after `--`) run on a throwaway PostgreSQL with
// pg_stat_statements loaded, sampled while it runs. Per run (each bench run has a database of its
// own) two windows are cut from the samples: the measured sends (the send statement's calls past
// the warm-up, to the last sample before the sends end) and the idle phase (the last --idle-window
// seconds before the first send: connects only). In each, per statement kind: calls, executor and
// planner time, rows, shared blocks hit/read/dirtied, WAL records and bytes — per send (the send
// statement's calls in the window) and per connect (the connect statement's) — and the database's
// CPU by backend kind (the Hubs' pool connections, their listeners and notifiers, the background
// processes) from /proc. Executor time is wall time inside the executor (lock waits included, the
// COMMIT and the protocol's parse/bind/network work not): the CPU by backend is what it costs.
// Never run by CI. Needs `npm run build`.
// Usage: node bench/pg-statements.mjs [--interval <ms, default 500>] [--idle-window <s, default 15>] [--warmup 500]
//          [--messages 3000] [--json <file>] [--perf <file>] [--explain <rate> [--explain-log <file>]] -- <bench/hub-cluster.mjs arguments>
// (--warmup/--messages: what the bench is given, so the send window is cut where its measured sends are.)
// --perf <file>: `perf record` of the cluster's processes (user `postgres`, no call graphs: Debian's postgres has
// no frame pointers) over each run's measured sends, into <file>.<n>; read with `perf report -i <file>.<n> --sort sym`.
import { spawn, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dashes = process.argv.indexOf('--');
const own = dashes < 0 ? process.argv.slice(2) : process.argv.slice(2, dashes);
const benchArgs = dashes < 0 ? [] : process.argv.slice(dashes + 1);
const arg = (args, name, dflt) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : dflt;
};

const admin = process.env.OH_HAI_BENCH_DATABASE_URL;
if (!admin) {
  // A throwaway cluster as .ci/postgres.sh starts it, then restarted with pg_stat_statements
  // preloaded (pg_ctl restart keeps the start's options); stopped and removed when this shell exits.
  const r = spawnSync(
    'bash',
    [
      '-c',
      `ulimit -n "$(ulimit -Hn)"; source .ci/postgres.sh >&2 || exit 1
       psql -q "$OH_HAI_TEST_DATABASE_URL" -c "ALTER SYSTEM SET shared_preload_libraries = pg_stat_statements, auto_explain" || exit 1
       restart=("\${CI_PG_STOP[@]:0:\${#CI_PG_STOP[@]}-1}" -l "$CI_PG_DIR/log" restart -w)
       "\${restart[@]}" >/dev/null || exit 1
       psql -q "$OH_HAI_TEST_DATABASE_URL" -c "ALTER SYSTEM SET pg_stat_statements.track_planning = on" -c "SELECT pg_reload_conf()" >/dev/null || exit 1
       OH_HAI_BENCH_DATABASE_URL="$OH_HAI_TEST_DATABASE_URL" PG_STATEMENTS_LOG="$CI_PG_DIR/log" node bench/pg-statements.mjs "$@"`,
      'pg-statements',
      ...process.argv.slice(2),
    ],
    { cwd: root, stdio: 'inherit' },
  );
  process.exit(r.status ?? 1);
}

const { default: pg } = await import('pg');
const INTERVAL_MS = Number(arg(own, 'interval', 500));
const IDLE_WINDOW_S = Number(arg(own, 'idle-window', 15));
const WARMUP = Number(arg(own, 'warmup', arg(benchArgs, 'warmup', 500)));
const MESSAGES = Number(arg(own, 'messages', arg(benchArgs, 'messages', 2000)));
const JSON_OUT = arg(own, 'json', null);
const PERF_OUT = arg(own, 'perf', null);
/** --explain <rate>: auto_explain logs that share of statements with their plan's per-node times, buffers and WAL; copied to --explain-log. */
const EXPLAIN_RATE = arg(own, 'explain', null);
const EXPLAIN_LOG = arg(own, 'explain-log', 'pg-statements-explain.log');

const db = new pg.Client({ connectionString: admin, application_name: 'pg-statements' });
await db.connect();
await db.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
await db.query('SELECT pg_stat_statements_reset()');
if (EXPLAIN_RATE !== null) {
  for (const [k, v] of [
    ['log_min_duration', '0'],
    ['log_analyze', 'on'],
    ['log_buffers', 'on'],
    ['log_wal', 'on'],
    ['log_timing', 'on'],
    ['log_nested_statements', 'on'],
    ['sample_rate', String(Number(EXPLAIN_RATE))],
  ])
    await db.query(`ALTER SYSTEM SET auto_explain.${k} = '${v}'`);
  await db.query('SELECT pg_reload_conf()');
}
const [{ data_directory: dataDir }] = (await db.query('SHOW data_directory')).rows;
const postmaster = Number(readFileSync(path.join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
const TICKS = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;

/** Each kind of statement the Hub sends, by its text; the first that matches names it. */
const KINDS = [
  ['send', /INSERT INTO messages/],
  ['connect (renewal + first page)', /^WITH oh_hai_clock .*renewed AS \(UPDATE sessions SET expires_at/s],
  ['connect (renewal)', /^WITH oh_hai_clock .*UPDATE sessions SET expires_at/s],
  ['presence / ends', /UPDATE sessions SET seen_at/],
  // connects.ts's statement for the connects a Hub gathered (a JSON table too): its rows are its renewed sessions.
  ['connect (batched)', /AS r\(i INTEGER, token TEXT/],
  ['page read', /json_to_recordset/],
  ['notify batch', /pg_notify/],
  ['credential', /^SELECT .*token_hash/s],
  ['sweep', /^SELECT .*(expires_at <=|created_at <=)/s],
  ['BEGIN (+ clock)', /^BEGIN/],
  ['COMMIT / ROLLBACK', /^(COMMIT|ROLLBACK)/],
];
const kindOf = (query) => KINDS.find(([, re]) => re.test(query))?.[0] ?? `other: ${query.replace(/\s+/g, ' ').slice(0, 70)}`;

const COUNTERS = [
  'calls',
  'total_exec_time',
  'total_plan_time',
  'plans',
  'rows',
  'shared_blks_hit',
  'shared_blks_read',
  'shared_blks_dirtied',
  'shared_blks_written',
  'wal_records',
  'wal_fpi',
  'wal_bytes',
];

/** CPU seconds of every live backend and background process of the cluster, by pid (`extra`: each one's kernel seconds and minor faults). */
function processCpu(extra = new Map()) {
  const out = new Map();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const f = readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1].split(' ');
      if (Number(f[1]) === postmaster || Number(entry) === postmaster) {
        out.set(Number(entry), (Number(f[11]) + Number(f[12])) / TICKS);
        // Beside the CPU: its kernel part and the minor faults (a backend maps each shared buffer it touches the first time).
        extra.set(Number(entry), { sys: Number(f[12]) / TICKS, minflt: Number(f[7]) });
      }
    } catch {
      // Gone meanwhile.
    }
  }
  return out;
}

/** What a backend is, by its database and application_name: a run's pool, listener, notifier; or a background process. */
const backendKind = (a) =>
  a === undefined
    ? 'ended backends'
    : a.backend_type !== 'client backend'
      ? `background: ${a.backend_type}`
      : a.application_name === 'pg-statements' || a.application_name === 'psql'
        ? 'this sampler'
        : !a.datname?.startsWith('oh_hai_bench_')
          ? 'the bench (admin)'
          : /notify/.test(a.application_name)
            ? 'notifier'
            : /listen/.test(a.application_name)
              ? 'listener'
              : a.application_name === ''
                ? 'pool (no name)'
                : `pool: ${a.application_name}`;

const samples = [];
const kinds = new Map();
async function sample() {
  const t = performance.now();
  const [stats, activity] = await Promise.all([
    db.query(
      `SELECT d.datname, s.queryid::text AS queryid, s.query, ${COUNTERS.map((c) => `s.${c}::float8 AS ${c}`).join(', ')}
         FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid WHERE d.datname LIKE 'oh_hai_bench_%'`,
    ),
    db.query(`SELECT pid, datname, application_name, backend_type FROM pg_stat_activity`),
  ]);
  const extra = new Map();
  const cpu = processCpu(extra);
  const byPid = new Map(activity.rows.map((a) => [a.pid, a]));
  const cpuBy = new Map();
  for (const [pid, s] of cpu) {
    const a = pid === postmaster ? { backend_type: 'postmaster' } : byPid.get(pid);
    const k = backendKind(a);
    const datname = a?.datname ?? null;
    const key = `${datname}|${k}`;
    cpuBy.set(key, (cpuBy.get(key) ?? 0) + s);
  }
  const byDb = new Map();
  for (const r of stats.rows) {
    if (!kinds.has(r.queryid)) kinds.set(r.queryid, { kind: kindOf(r.query), query: r.query });
    let m = byDb.get(r.datname);
    if (m === undefined) byDb.set(r.datname, (m = new Map()));
    m.set(r.queryid, Object.fromEntries(COUNTERS.map((c) => [c, Number(r[c])])));
  }
  samples.push({ t, byDb, cpu, extra, cpuBy, byPid });
}

/** The counters of `dbName`'s statements summed by kind at sample `s`. */
function byKind(s, dbName) {
  const out = new Map();
  for (const [qid, c] of s.byDb.get(dbName) ?? []) {
    const k = kinds.get(qid).kind;
    const acc = out.get(k) ?? Object.fromEntries(COUNTERS.map((n) => [n, 0]));
    for (const n of COUNTERS) acc[n] += c[n];
    out.set(k, acc);
  }
  return out;
}
const sendCalls = (s, dbName) => byKind(s, dbName).get('send')?.calls ?? 0;
const connectCalls = (s, dbName) => {
  const k = byKind(s, dbName);
  // A batched statement's rows: one per renewed session (more only for a session with mail waiting, which the idle phase has not).
  return (k.get('connect (renewal + first page)')?.calls ?? 0) + (k.get('connect (renewal)')?.calls ?? 0) + (k.get('connect (batched)')?.rows ?? 0);
};

const bench = spawn(process.execPath, [path.join(root, 'bench', 'hub-cluster.mjs'), ...benchArgs], {
  cwd: root,
  env: { ...process.env, OH_HAI_BENCH_DATABASE_URL: admin },
  stdio: 'inherit',
});
const done = new Promise((r) => bench.once('exit', r));
let running = true;
void done.then(() => (running = false));
/** --perf: the recorder running over a run's measured sends, and the runs recorded so far (by database). */
let perf = null;
const perfed = new Set();
while (running) {
  await sample();
  if (PERF_OUT !== null) watchPerf(samples[samples.length - 1]);
  await Promise.race([new Promise((r) => setTimeout(r, INTERVAL_MS)), done]);
}
if (perf !== null) await stopPerf();

/** Start `perf record` when a run's sends pass the warm-up, stop it when they reach its end. */
function watchPerf(s) {
  for (const name of s.byDb.keys()) {
    const n = sendCalls(s, name);
    if (perf === null && !perfed.has(name) && n >= WARMUP && n < WARMUP + MESSAGES / 2) {
      perfed.add(name);
      const file = `${PERF_OUT}.${perfed.size}`;
      console.log(`pg-statements: perf record of ${name}'s sends into ${file}`);
      perf = { name, proc: spawn('perf', ['record', '-q', '-F', '1999', '-u', 'postgres', '-o', file], { stdio: 'ignore' }) };
    } else if (perf?.name === name && n >= WARMUP + MESSAGES) void stopPerf();
  }
}
async function stopPerf() {
  const p = perf.proc;
  perf = null;
  if (p.exitCode !== null) return;
  const exited = new Promise((r) => p.once('exit', r));
  p.kill('SIGINT');
  await exited;
}

/**
 * CPU in (a, b] by backend kind. A backend's CPU is counted between two samples only while it lives
 * in both (one that ended meanwhile is in "ended backends": its last seen figure is all we have).
 */
function cpuBetween(a, b, extra) {
  const out = new Map();
  for (const [pid, s1] of b.cpu) {
    const s0 = a.cpu.get(pid) ?? 0;
    const who = pid === postmaster ? { backend_type: 'postmaster' } : (b.byPid.get(pid) ?? a.byPid.get(pid));
    const k = backendKind(who);
    out.set(k, (out.get(k) ?? 0) + s1 - s0);
    if (extra !== undefined && s1 - s0 > 0) {
      const e0 = a.extra.get(pid) ?? { sys: 0, minflt: 0 };
      const e1 = b.extra.get(pid);
      const acc = extra.get(k) ?? { busy: 0, sys: 0, minflt: 0 };
      acc.busy += 1;
      acc.sys += e1.sys - e0.sys;
      acc.minflt += e1.minflt - e0.minflt;
      extra.set(k, acc);
    }
  }
  return out;
}

function windowReport(dbName, a, b, per) {
  const ka = byKind(a, dbName);
  const kb = byKind(b, dbName);
  const sends = (kb.get('send')?.calls ?? 0) - (ka.get('send')?.calls ?? 0);
  const connects = connectCalls(b, dbName) - connectCalls(a, dbName);
  const unit = per === 'send' ? sends : connects;
  const seconds = (b.t - a.t) / 1000;
  const rows = [];
  for (const [k, c1] of kb) {
    const c0 = ka.get(k) ?? Object.fromEntries(COUNTERS.map((n) => [n, 0]));
    const d = Object.fromEntries(COUNTERS.map((n) => [n, c1[n] - c0[n]]));
    if (d.calls === 0) continue;
    rows.push({ kind: k, ...d });
  }
  rows.sort((x, y) => y.total_exec_time + y.total_plan_time - (x.total_exec_time + x.total_plan_time));
  const extra = new Map();
  const cpu = [...cpuBetween(a, b, extra)].filter(([, s]) => s > 0).sort((x, y) => y[1] - x[1]);
  return { dbName, per, unit, sends, connects, seconds, rows, cpu, extra: Object.fromEntries(extra) };
}

function printWindow(w, label) {
  const u = w.unit;
  console.log(
    `\n${w.dbName} — ${label}: ${w.seconds.toFixed(1)} s, ${w.sends} sends (${(w.sends / w.seconds).toFixed(0)}/s), ${w.connects} connects (${(w.connects / w.seconds).toFixed(0)}/s); per ${w.per} (÷ ${u})`,
  );
  console.log(
    'kind                              calls  exec ms  plan ms  plans  rows    blks hit  blks read  dirtied  written  WAL recs  WAL FPI  WAL bytes  | exec µs/call',
  );
  const f = (v, d) => (u === 0 ? '—' : (v / u).toFixed(d));
  const total = Object.fromEntries(COUNTERS.map((n) => [n, 0]));
  for (const r of w.rows) {
    for (const n of COUNTERS) total[n] += r[n];
    console.log(
      `${r.kind.slice(0, 32).padEnd(32)} ${f(r.calls, 3).padStart(6)} ${f(r.total_exec_time, 4).padStart(8)} ${f(r.total_plan_time, 4).padStart(8)} ${f(r.plans, 3).padStart(6)} ${f(r.rows, 2).padStart(5)} ${f(r.shared_blks_hit, 1).padStart(11)} ${f(r.shared_blks_read, 2).padStart(10)} ${f(r.shared_blks_dirtied, 2).padStart(8)} ${f(r.shared_blks_written, 2).padStart(8)} ${f(r.wal_records, 2).padStart(9)} ${f(r.wal_fpi, 3).padStart(8)} ${f(r.wal_bytes, 0).padStart(10)}  | ${((r.total_exec_time / r.calls) * 1000).toFixed(0).padStart(6)}`,
    );
  }
  console.log(
    `${'all statements'.padEnd(32)} ${f(total.calls, 3).padStart(6)} ${f(total.total_exec_time, 4).padStart(8)} ${f(total.total_plan_time, 4).padStart(8)} ${f(total.plans, 3).padStart(6)} ${f(total.rows, 2).padStart(5)} ${f(total.shared_blks_hit, 1).padStart(11)} ${f(total.shared_blks_read, 2).padStart(10)} ${f(total.shared_blks_dirtied, 2).padStart(8)} ${f(total.shared_blks_written, 2).padStart(8)} ${f(total.wal_records, 2).padStart(9)} ${f(total.wal_fpi, 3).padStart(8)} ${f(total.wal_bytes, 0).padStart(10)}`,
  );
  const cpuAll = w.cpu.reduce((s, [, v]) => s + v, 0);
  console.log(
    `database CPU ${u === 0 ? '—' : ((cpuAll * 1000) / u).toFixed(3)} ms per ${w.per} (${((cpuAll / w.seconds) * 100).toFixed(0)}% of a core): ${w.cpu
      .map(([k, s]) => `${k} ${u === 0 ? '—' : ((s * 1000) / u).toFixed(3)}`)
      .join(', ')}`,
  );
  console.log(
    `by backend kind, per ${w.per}: ${w.cpu
      .filter(([k]) => w.extra[k] !== undefined && !k.startsWith('this'))
      .map(([k, s]) => {
        const e = w.extra[k];
        return `${k} ${e.busy} busy, kernel ${((e.sys / s) * 100).toFixed(0)}%, minor faults ${u === 0 ? '—' : (e.minflt / u).toFixed(1)}`;
      })
      .join('; ')}`,
  );
}

const dbNames = [...new Set(samples.flatMap((s) => [...s.byDb.keys()]))].sort(
  (x, y) => samples.findIndex((s) => s.byDb.has(x)) - samples.findIndex((s) => s.byDb.has(y)),
);
const report = [];
for (const name of dbNames) {
  const mine = samples.filter((s) => s.byDb.has(name));
  // The measured sends: from the first sample past the warm-up to the first at their end (the run's backends still live).
  const from = mine.find((s) => sendCalls(s, name) >= WARMUP);
  const to = mine.find((s) => sendCalls(s, name) >= WARMUP + MESSAGES);
  const firstSend = mine.find((s) => sendCalls(s, name) > 0);
  const idleTo = firstSend === undefined ? undefined : [...mine].reverse().find((s) => s.t < firstSend.t);
  const idleFrom = idleTo === undefined ? undefined : mine.find((s) => s.t >= idleTo.t - IDLE_WINDOW_S * 1000 && connectCalls(s, name) > 0);
  const run = { dbName: name };
  if (idleFrom !== undefined && idleTo !== undefined && idleTo.t > idleFrom.t) {
    run.idle = windowReport(name, idleFrom, idleTo, 'connect');
    printWindow(run.idle, 'idle (connects only)');
  }
  if (from !== undefined && to !== undefined && to !== from) {
    run.send = windowReport(name, from, to, 'send');
    printWindow(run.send, 'the measured sends');
    // The connects during the sends cost what the idle phase's did: taken out, what is left is the sends' own (and their
    // pushes'), whatever the sends' rate (at 10,000 streams ~330 connects a second fall on however many sends there are).
    if (run.idle !== undefined && run.idle.unit > 0 && run.send.unit > 0) {
      const cpu = (w) => w.cpu.filter(([k]) => k.startsWith('pool') || k === 'notifier' || k === 'listener').reduce((a, [, v]) => a + v, 0);
      run.netMsPerSend = ((cpu(run.send) - (run.send.connects * cpu(run.idle)) / run.idle.unit) * 1000) / run.send.unit;
      console.log(
        `the Hubs' backends: ${((cpu(run.idle) * 1000) / run.idle.unit).toFixed(3)} ms per connect idle; during the sends ${((cpu(run.send) * 1000) / run.send.unit).toFixed(3)} ms per send, of it the sends' own (the connects at the idle cost taken out) ${run.netMsPerSend.toFixed(3)} ms`,
      );
    }
  }
  report.push(run);
}
console.log('\nstatement texts by kind (first of each):');
const shown = new Set();
for (const { kind, query } of kinds.values()) {
  if (shown.has(kind)) continue;
  shown.add(kind);
  console.log(`-- ${kind}\n${query.replace(/\s+/g, ' ').slice(0, 600)}`);
}
if (EXPLAIN_RATE !== null && process.env.PG_STATEMENTS_LOG) writeFileSync(EXPLAIN_LOG, readFileSync(process.env.PG_STATEMENTS_LOG));
if (JSON_OUT !== null) writeFileSync(JSON_OUT, JSON.stringify({ report, kinds: Object.fromEntries(kinds) }, null, 1));
await db.end();
process.exit((await done) ?? 0);
