// N bridges against one reference Hub on loopback for a while: no lost entry, every lease
// renewed, and the request rate the bridges put on the Hub against the product doc's
// estimate ("Running many bridges": with a 30 s hold, a reconnect every 30 s per bridge —
// about 2 a minute each, ~100 a minute for fifty). Needs `npm run build`. Never run by CI.
//
//   node bench/many-bridges.mjs [--bridges 50] [--duration 120] [--per-agent 10] [--message-every 30]
//
// Every bridge is a real `oh-hai bridge` re-run after every exit (as an agent runs it), with
// its real background connection; all share one state root. The bridges reach the Hub
// through a counting proxy in this process, so every request they make is classified and
// counted; the bench's own sends and checks go to the Hub directly and are not counted.
import { spawn } from 'node:child_process';
import http from 'node:http';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { bin, startHub } from './bridge-world.mjs';
import { listStateDirs, sessionStateDir, stateKey } from '../dist/spool/index.js';

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const N = arg('bridges', 50);
const DURATION_S = arg('duration', 120);
const PER_AGENT = arg('per-agent', 10);
const MESSAGE_EVERY_S = arg('message-every', 30);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const now = () => performance.now();

// ---- the Hub, and a proxy that counts what the bridges ask of it ----
const hub = await startHub();
const hubUrl = new URL(hub.url);
const cap = await (await fetch(`${hub.url}/v1/capability`)).json();
const HOLD_S = cap.inbound.stream_max_hold_seconds;

const classes = ['stream connect', 'drain', 'ack', 'session register', 'session read', 'capability', 'whoami', 'other'];
const classify = (req) => {
  const p = req.url.split('?')[0];
  if (p === '/v1/inbox/stream') return 'stream connect';
  if (p === '/v1/inbox') return 'drain';
  if (p === '/v1/inbox/ack') return 'ack';
  if (p === '/v1/sessions' && req.method === 'POST') return 'session register';
  if (p.startsWith('/v1/sessions/')) return 'session read';
  if (p === '/v1/capability') return 'capability';
  if (p === '/v1/whoami') return 'whoami';
  return 'other';
};
/** Every request the bridges made: [time (ms, performance.now), class, consumer home]. */
const seen = [];
const proxy = http.createServer((req, res) => {
  const home = /home=([^;]+)/.exec(req.headers['ma2h-consumer'] ?? '')?.[1] ?? null;
  seen.push([now(), classify(req), home]);
  const up = http.request({ host: hubUrl.hostname, port: hubUrl.port, method: req.method, path: req.url, headers: req.headers }, (ur) => {
    res.writeHead(ur.statusCode ?? 502, ur.headers);
    ur.pipe(res);
  });
  up.on('error', () => res.destroy());
  res.on('close', () => up.destroy());
  req.pipe(up);
});
await new Promise((r) => proxy.listen(0, '127.0.0.1', r));
const proxyUrl = `http://127.0.0.1:${proxy.address().port}`;

// ---- agents, one shared state root, and a sender ----
const tmp = mkdtempSync(path.join(os.tmpdir(), 'oh-hai-bench-many-'));
const stateRoot = path.join(tmp, 'state');
const agents = [];
for (let i = 0; i < Math.ceil(N / PER_AGENT); i++) agents.push(await hub.mint(`bench-${i}`));
const sender = await hub.mint('bench-sender');
const baseEnv = {
  PATH: process.env.PATH,
  HOME: tmp,
  XDG_STATE_HOME: stateRoot,
  XDG_CONFIG_HOME: path.join(tmp, 'config'),
  MA2H_HUB_URL: proxyUrl,
  MA2H_AGENT_TOKENS: agents.map((a) => `${a.id}=${a.token}`).join(','),
};

const bridges = Array.from({ length: N }, (_, i) => {
  const agent = agents[Math.floor(i / PER_AGENT)];
  const session = `bench-${i}`;
  return {
    i,
    agent,
    session,
    env: { ...baseEnv, MA2H_AGENT_SESSION_ID: session },
    dir: sessionStateDir(stateRoot, stateKey(proxyUrl, agent.id, session)),
    printed: new Set(),
    runs: 0,
    exits: {},
    child: null,
    stopped: false,
  };
});

const readSession = (b) => {
  try {
    return JSON.parse(readFileSync(path.join(b.dir, 'session.json'), 'utf8'));
  } catch {
    return null;
  }
};

/** `oh-hai bridge`, re-run after every exit; a stop class ends the loop (and is reported). */
async function readerLoop(b) {
  const STOP = new Set([2, 3, 4, 10, 11, 12, 14, 15]);
  while (!b.stopped) {
    b.runs += 1;
    const code = await new Promise((resolve) => {
      const c = spawn(process.execPath, [bin, 'bridge', '--raw', '--agent', b.agent.id, '--allow-from', 'any-in-account'], {
        env: b.env,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      b.child = c;
      let buf = '';
      c.stdout.setEncoding('utf8').on('data', (d) => {
        buf += d;
        let nl;
        while ((nl = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, nl);
          buf = buf.slice(nl + 1);
          const rec = JSON.parse(line);
          if (rec.type === 'entry' && rec.entry.kind === 'message') b.printed.add(rec.entry.message_id);
        }
      });
      c.stderr.resume();
      c.once('close', (code, signal) => resolve(code ?? 128 + (os.constants.signals[signal] ?? 0)));
    });
    b.child = null;
    b.exits[code] = (b.exits[code] ?? 0) + 1;
    if (STOP.has(code)) {
      b.stopped = true;
      b.stopClass = code;
    }
  }
}

// ---- launch, staggered over one hold so a restart does not wake a synchronized herd ----
const t0 = now();
const loops = [];
for (const b of bridges) {
  loops.push(readerLoop(b));
  await sleep((HOLD_S * 1000) / N);
}
const deadline = Date.now() + 120_000;
while (bridges.some((b) => readSession(b) === null)) {
  if (Date.now() > deadline) throw new Error(`bridges without a session after 120 s: ${bridges.filter((b) => !readSession(b)).map((b) => b.i)}`);
  await sleep(200);
}
const initial = new Map(bridges.map((b) => [b.i, readSession(b)]));
const upAt = now();
console.log(`${N} bridges up in ${((upAt - t0) / 1000).toFixed(1)} s (launch staggered over ${HOLD_S} s); measuring for ${DURATION_S} s`);

// ---- traffic: one message per bridge every MESSAGE_EVERY_S, staggered ----
const sent = new Map(); // message id → bridge index
const sendTo = async (b, n) => {
  const res = await fetch(`${hub.url}/v1/messages`, {
    method: 'POST',
    headers: { authorization: `Bearer ${sender.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ to: initial.get(b.i).address, intent: 'notify', text: `bench ${b.i} #${n}`, idempotency_key: `bench-${b.i}-${n}` }),
  });
  const body = await res.json();
  if (res.status !== 202) throw new Error(`send to bridge ${b.i}: ${res.status} ${JSON.stringify(body)}`);
  sent.set(body.message.id, b.i);
};
const endAt = upAt + DURATION_S * 1000;
const senders = bridges.map(async (b) => {
  await sleep((b.i * MESSAGE_EVERY_S * 1000) / N);
  for (let n = 0; now() < endAt; n++) {
    await sendTo(b, n);
    await sleep(MESSAGE_EVERY_S * 1000);
  }
});
await Promise.all(senders);
await sleep(Math.max(0, endAt - now()));
const window = [upAt, endAt];

// ---- drain: every message printed by its bridge, and acknowledged at the Hub ----
const drainDeadline = Date.now() + 60_000;
const unprinted = () => [...sent].filter(([id, i]) => !bridges[i].printed.has(id));
while (unprinted().length > 0 && Date.now() < drainDeadline) await sleep(200);
const states = {};
for (const id of sent.keys()) {
  const m = (await hub.call(sender.token, 'GET', `/v1/messages/${id}`)).message;
  states[m.state] = (states[m.state] ?? 0) + 1;
}

// ---- leases: the same session throughout, active, renewed within the last hold ----
let active = 0;
let changed = 0;
const sinceRenewal = [];
const hubNow = Date.parse((await (await fetch(`${hub.url}/v1/capability`)).json()).server_time);
for (const b of bridges) {
  const first = initial.get(b.i);
  const last = readSession(b);
  if (!last || last.id !== first.id || last.history.length > 0) changed += 1;
  const s = (await hub.call(b.agent.token, 'GET', `/v1/sessions/${first.id}`)).session;
  if (s.state === 'active') active += 1;
  // Both instants are the Hub's: the age of the last renewal on the Hub's own clock.
  sinceRenewal.push((hubNow - Date.parse(s.last_renewed_at)) / 1000);
}

// ---- the request rate in the measured window ----
const inWindow = seen.filter(([t]) => t >= window[0] && t < window[1]);
const minutes = (window[1] - window[0]) / 60_000;
const byClass = Object.fromEntries(classes.map((c) => [c, inWindow.filter(([, k]) => k === c).length]));
const connectsPerHome = new Map();
for (const [, k, home] of inWindow) if (k === 'stream connect' && home) connectsPerHome.set(home, (connectsPerHome.get(home) ?? 0) + 1);
const perBridge = [...connectsPerHome.values()].map((n) => n / minutes).sort((a, b) => a - b);
const estimate = 60 / HOLD_S;

const fmt = (x) => x.toFixed(2);
const lost = unprinted().length;
const exitCounts = {};
for (const b of bridges) for (const [c, n] of Object.entries(b.exits)) exitCounts[c] = (exitCounts[c] ?? 0) + n;
console.log('');
console.log(`bridges ${N} (${agents.length} agents, ${PER_AGENT} sessions each, one state root) · hold ${HOLD_S} s · measured ${fmt(minutes)} min`);
console.log(`messages: sent ${sent.size}, printed by their bridge ${sent.size - lost}, LOST ${lost}; final states ${JSON.stringify(states)}`);
console.log(
  `leases: ${active}/${N} sessions active at the end, ${changed} address changes, last renewal ${fmt(Math.min(...sinceRenewal))}–${fmt(Math.max(...sinceRenewal))} s before the end (Hub's clock; a hold is ${HOLD_S} s)`,
);
console.log(
  `reader runs: ${bridges.reduce((s, b) => s + b.runs, 0)} (exit codes ${JSON.stringify(exitCounts)}; stop classes hit: ${bridges.filter((b) => b.stopClass !== undefined).length})`,
);
console.log(
  `requests per minute (all ${N} bridges): ${Object.entries(byClass)
    .filter(([, n]) => n > 0)
    .map(([c, n]) => `${c} ${fmt(n / minutes)}`)
    .join(', ')}; total ${fmt(inWindow.length / minutes)}`,
);
console.log(
  `stream connects per bridge per minute: median ${fmt(perBridge[Math.floor(perBridge.length / 2)] ?? 0)} (min ${fmt(perBridge[0] ?? 0)}, max ${fmt(perBridge.at(-1) ?? 0)}) — ` +
    `doc estimate ${fmt(estimate)} (a reconnect every ${HOLD_S} s); measured/estimate ${fmt(byClass['stream connect'] / minutes / (N * estimate))} ` +
    `(${fmt(byClass['stream connect'] / minutes)} vs ${fmt(N * estimate)} a minute)`,
);

// ---- stand down: stop the readers and the connections this bench started, then the Hub ----
for (const b of bridges) {
  b.stopped = true;
  b.child?.kill('SIGTERM');
}
await Promise.all(loops);
for (const loc of listStateDirs(stateRoot)) {
  try {
    const c = JSON.parse(readFileSync(path.join(loc.dir, 'consumer.json'), 'utf8'));
    if (c.state !== 'stopped') process.kill(c.pid, 'SIGTERM');
  } catch {
    // no record, or already gone
  }
}
await sleep(500);
proxy.close();
await hub.stop();
rmSync(tmp, { recursive: true, force: true });
process.exitCode = lost === 0 && active === N && changed === 0 ? 0 : 1;
