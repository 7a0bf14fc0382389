// What one send costs the reference Hub: its CPU (all threads, from /proc/<pid>/task/*/schedstat)
// per `POST /v1/messages` including the push of the entry to the recipient session's open
// stream, against the Hub's HTTP floor (`GET /v1/capability`: parse, route, one JSON answer)
// measured in the same run, phase by phase in turn. With --against <another checkout>, that
// build's Hub runs beside this one and every phase alternates between the two (before/after).
// With --callgrind each Hub runs under valgrind and the figure is instructions (repeatable on a
// loaded machine; wall and CPU time are not); callgrind_control switches counting on, zeroes and dumps
// around each phase, so start-up and set-up are not counted. Never run by CI.
//
//   node bench/send-cost.mjs [--sends 500] [--rounds 3] [--sessions 4] [--concurrency 1]
//                            [--warmup 300] [--against /path/to/other/checkout] [--callgrind]
//                            [--cpu-prof <dir>]   (this build's Hub writes a V8 CPU profile there,
//                            and the bench the send phases' time windows: bench/cpu-profile-breakdown.mjs <dir>)
//
// Each send goes to one session address (round robin over --sessions sessions of ONE recipient
// agent, each holding a stream), so every send is one insert, one commit and one push. The
// client keeps its connections alive (one per in-flight send), as a bridge's sender would in a
// long-running process; a CLI `oh-hai send` pays a TCP connect besides.
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { holdStream } from './hub-streams.mjs';
import { keepAliveCaller } from './sender.mjs';

const argv = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : dflt;
};
const SENDS = Number(opt('sends', 500));
const ROUNDS = Number(opt('rounds', 3));
const SESSIONS = Number(opt('sessions', 4));
const CONCURRENCY = Number(opt('concurrency', 1));
const WARMUP = Number(opt('warmup', 300));
const CALLGRIND = argv.includes('--callgrind');
const AGAINST = opt('against', null);
const CPU_PROF = opt('cpu-prof', null);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

const loadavg = () =>
  os
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(' ');

/** CPU time of every thread of `pid` so far, in ns (schedstat's first field). */
function cpuNs(pid) {
  let sum = 0;
  for (const t of readdirSync(`/proc/${pid}/task`)) {
    try {
      sum += Number(readFileSync(`/proc/${pid}/task/${t}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      // a thread that ended between the listing and the read: its time is in no later figure either
    }
  }
  return sum;
}

/** Instructions since the last zeroing, from a fresh callgrind dump of `pid`. */
function dumpInstructions(hub) {
  const before = new Set(readdirSync(hub.tmp));
  execFileSync('callgrind_control', ['-d', String(hub.pid)], { stdio: 'ignore' });
  const dump = readdirSync(hub.tmp).find((f) => f.startsWith('callgrind.out') && !before.has(f));
  if (dump === undefined) throw new Error('callgrind wrote no dump');
  const text = readFileSync(path.join(hub.tmp, dump), 'utf8');
  rmSync(path.join(hub.tmp, dump));
  const m = /^(?:summary|totals): (\d+)/m.exec(text);
  if (!m) throw new Error(`no totals in ${dump}`);
  return Number(m[1]);
}

async function startHub(checkout, label) {
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'oh-hai-send-cost-'));
  const data = path.join(tmp, 'data');
  const profile = CPU_PROF !== null && checkout === root ? ['--cpu-prof', '--cpu-prof-dir', path.resolve(CPU_PROF)] : [];
  const hubArgs = [...profile, path.join(checkout, 'bin', 'oh-hai'), 'hub', 'serve', '--port', '0', '--data', data];
  const [cmd, args] = CALLGRIND
    ? [
        'valgrind',
        [
          '--tool=callgrind',
          '--instr-atstart=no',
          `--callgrind-out-file=${path.join(tmp, 'callgrind.out.%p')}`,
          '--log-file=' + path.join(tmp, 'valgrind.log'),
          process.execPath,
          ...hubArgs,
        ],
      ]
    : [process.execPath, hubArgs];
  const proc = spawn(cmd, args, {
    env: { PATH: process.env.PATH, HOME: tmp, MA2H_SIGNING_KEY: 'bench-key', ...(process.env.OH_HAI_TRACE ? { OH_HAI_TRACE: process.env.OH_HAI_TRACE } : {}) },
    stdio: ['ignore', 'pipe', 'inherit'],
    cwd: tmp,
  });
  const url = await new Promise((resolve, reject) => {
    let out = '';
    proc.stdout.setEncoding('utf8').on('data', (d) => {
      out += d;
      const m = /^hub: listening on (http:\/\/\S+)$/m.exec(out);
      if (m) resolve(m[1]);
    });
    proc.once('exit', (c, sig) => reject(new Error(`${label}: hub exited ${c ?? sig} before it was ready`)));
  });
  const human = readFileSync(path.join(data, 'human-token'), 'utf8').trim();
  // One kept-alive connection per request in flight, as a long-running sender holds them.
  const send = keepAliveCaller(url, CONCURRENCY);
  const call = (method, p, token, body) => send(token, method, p, body);
  const sender = await call('POST', '/v1/account/agents', human, { label: 'cost-sender' });
  const recipient = await call('POST', '/v1/account/agents', human, { label: 'cost-recipient' });
  const sessions = [];
  for (let i = 0; i < SESSIONS; i++) {
    const s = await call('POST', '/v1/sessions', recipient.token, { client_key: `cost-${i}` });
    sessions.push(s.session);
  }
  const hub = { label, checkout, tmp, pid: proc.pid, proc, url, call, sender, recipient, sessions, pushed: 0, streams: [] };
  let opened = 0;
  // Counts every delivery pushed (holdStream reports each message id it sees).
  const counter = { arrived: () => (hub.pushed += 1) };
  for (const s of sessions) hub.streams.push(holdStream({ url, id: s.id, token: recipient.token }, counter, { onOpen: () => opened++ }));
  while (opened < SESSIONS) await new Promise((r) => setTimeout(r, 20));
  return hub;
}

async function sends(hub, n) {
  const target = hub.pushed + n;
  let next = 0;
  const worker = async () => {
    while (next < n) {
      const s = hub.sessions[next++ % hub.sessions.length];
      await hub.call('POST', '/v1/messages', hub.sender.token, { to: s.address, intent: 'notify', text: `cost ${next}` });
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  const deadline = Date.now() + 120_000;
  while (hub.pushed < target) {
    if (Date.now() > deadline) throw new Error(`${hub.label}: ${target - hub.pushed} pushes never arrived`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

async function floor(hub, n) {
  let next = 0;
  const worker = async () => {
    while (next++ < n) await hub.call('GET', '/v1/capability', hub.sender.token);
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
}

/** The Hub's cost of `fn` over n requests: ns of CPU or instructions, per request. */
async function measure(hub, n, fn) {
  if (CALLGRIND) {
    execFileSync('callgrind_control', ['-i', 'on', String(hub.pid)], { stdio: 'ignore' });
    execFileSync('callgrind_control', ['-z', String(hub.pid)], { stdio: 'ignore' });
    await fn(hub, n);
    const ir = dumpInstructions(hub);
    execFileSync('callgrind_control', ['-i', 'off', String(hub.pid)], { stdio: 'ignore' });
    return ir / n;
  }
  const before = cpuNs(hub.pid);
  const started = process.hrtime.bigint();
  await fn(hub, n);
  // The profile's timestamps are CLOCK_MONOTONIC µs too: the breakdown keeps the send phases.
  if (CPU_PROF !== null && hub.checkout === root && fn === sends) windows.push([Number(started / 1000n), Number(process.hrtime.bigint() / 1000n)]);
  return (cpuNs(hub.pid) - before) / n;
}

/** The send phases of this build's Hub, for bench/cpu-profile-breakdown.mjs. */
const windows = [];
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const unit = CALLGRIND ? 'instructions' : 'CPU µs';
const fmt = (v) => (CALLGRIND ? `${(v / 1e6).toFixed(2)} M` : `${(v / 1000).toFixed(0)} µs`);

const builds = [{ checkout: root, label: 'this build' }];
if (AGAINST) builds.push({ checkout: path.resolve(AGAINST), label: `against ${path.resolve(AGAINST)}` });
console.log(
  `send-cost: Node ${process.version}; ${SENDS} sends × ${ROUNDS} rounds per build, ${SESSIONS} sessions with a stream each, ` +
    `${CONCURRENCY} in flight, ${WARMUP} warm-up; figure: ${unit} per request${CALLGRIND ? ' (callgrind)' : ''}; load average ${loadavg()}`,
);
const hubs = [];
try {
  for (const b of builds) hubs.push(await startHub(b.checkout, b.label));
  for (const hub of hubs) {
    await sends(hub, WARMUP);
    await floor(hub, WARMUP);
  }
  const results = new Map(hubs.map((h) => [h, { send: [], floor: [] }]));
  for (let r = 0; r < ROUNDS; r++) {
    for (const hub of hubs) {
      results.get(hub).floor.push(await measure(hub, SENDS, floor));
      results.get(hub).send.push(await measure(hub, SENDS, sends));
    }
  }
  for (const hub of hubs) {
    const { send, floor: fl } = results.get(hub);
    const s = median(send);
    const f = median(fl);
    console.log(
      `${hub.label}: send ${fmt(s)} (rounds ${send.map(fmt).join(', ')}), HTTP floor ${fmt(f)} (${fl.map(fmt).join(', ')}); send = ${(s / f).toFixed(2)}× floor`,
    );
  }
  if (hubs.length === 2) {
    const [a, b] = hubs.map((h) => median(results.get(h).send));
    const [fa, fb] = hubs.map((h) => median(results.get(h).floor));
    console.log(`this build / against: send ${(a / b).toFixed(2)}×, floor ${(fa / fb).toFixed(2)}×`);
  }
  console.log(`load average at the end ${loadavg()}`);
  if (CPU_PROF !== null) writeFileSync(path.join(path.resolve(CPU_PROF), 'send-phases.json'), JSON.stringify(windows));
} finally {
  for (const hub of hubs) {
    for (const stream of hub.streams) stream.stop();
    hub.proc.kill('SIGTERM');
    await new Promise((r) => (hub.proc.exitCode !== null ? r() : hub.proc.once('exit', r)));
    rmSync(hub.tmp, { recursive: true, force: true });
  }
}
process.exit(0);
