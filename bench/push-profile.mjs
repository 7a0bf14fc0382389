// Where the Hub's push goes between a send's COMMIT and the push's write(2): a Hub run with the
// full trace (OH_HAI_TRACE) and a V8 CPU profile sampled every --interval µs; one recipient
// session holds a stream, a sender sends --sends messages to it one at a time, --gap ms apart
// (each waited for until pushed), and the profile's samples that fall between each message's
// hub.committed and hub.written (both CLOCK_MONOTONIC, as the profile's clock) are attributed:
// self time by function, time by frame on the stack, and the commonest stacks, per push. The
// trace's own appends (hub.paged, hub.written) are inside the window. The first --skip pushes
// (the Hub's first, cold) are left out. Never run by CI.
//   node bench/push-profile.mjs [--sends 400] [--gap 20] [--skip 20] [--interval 10] [--top 30] [--cli <checkout>/bin/oh-hai]
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { bin, hubCaller, hubReady } from './bridge-world.mjs';
import { holdStream } from './hub-streams.mjs';

const opt = (name, dflt) => {
  const i = process.argv.indexOf(`--${name}`);
  return i < 0 ? dflt : process.argv[i + 1];
};
const SENDS = Number(opt('sends', 400));
const GAP = Number(opt('gap', 20));
const SKIP = Number(opt('skip', 20));
const INTERVAL = Number(opt('interval', 10));
const TOP = Number(opt('top', 30));
const CLI = opt('cli', bin);

const tmp = mkdtempSync(path.join(os.tmpdir(), 'oh-hai-push-profile-'));
const trace = path.join(tmp, 'trace');
const profDir = path.join(tmp, 'prof');
console.log(
  `push-profile: Node ${process.version}; ${SENDS} sends ${GAP} ms apart, profile every ${INTERVAL} µs; load average ${os
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}`,
);
// bridge-world's startHub, with the profile's flags (NODE_OPTIONS may not carry --cpu-prof).
const data = path.join(tmp, 'data');
const proc = spawn(
  process.execPath,
  ['--cpu-prof', `--cpu-prof-dir=${profDir}`, `--cpu-prof-interval=${INTERVAL}`, CLI, 'hub', 'serve', '--port', '0', '--data', data],
  {
    env: { PATH: process.env.PATH, HOME: tmp, XDG_STATE_HOME: path.join(tmp, 'state'), XDG_CONFIG_HOME: path.join(tmp, 'config'), OH_HAI_TRACE: trace },
    stdio: ['ignore', 'pipe', 'inherit'],
  },
);
const url = await hubReady(proc);
const call = hubCaller(url);
const human = readFileSync(path.join(data, 'human-token'), 'utf8').trim();
const mint = async (label) => {
  const r = await call(human, 'POST', '/v1/account/agents', { label });
  return { id: r.agent.id, token: r.token };
};
const hub = { url, call, mint };
const recipient = await hub.mint('profile-recipient');
const sender = await hub.mint('profile-sender');
const { session } = await hub.call(recipient.token, 'POST', '/v1/sessions', { client_key: 'profile' });
let pushed = 0;
let opened = false;
const stream = holdStream({ url: hub.url, id: session.id, token: recipient.token }, { arrived: () => (pushed += 1) }, { onOpen: () => (opened = true) });
while (!opened) await new Promise((r) => setTimeout(r, 10));
for (let i = 0; i < SENDS; i++) {
  await new Promise((r) => setTimeout(r, GAP));
  const want = pushed + 1;
  await hub.call(sender.token, 'POST', '/v1/messages', { to: session.address, intent: 'notify', text: `profile ${i} ${'x'.repeat(400)}` });
  while (pushed < want) await new Promise((r) => setImmediate(r));
}
stream.stop();
proc.kill('SIGTERM');
await new Promise((r) => proc.once('exit', r));

/** Each message's hops, in µs of CLOCK_MONOTONIC (the profile's clock). */
const hops = new Map();
for (const line of readFileSync(trace, 'utf8').split('\n')) {
  const [ns, name, id] = line.split(' ');
  if (!id) continue;
  if (!hops.has(id)) hops.set(id, {});
  hops.get(id)[name] ??= Number(BigInt(ns) / 1000n);
}
const windows = [...hops.values()]
  .filter((h) => h['hub.committed'] && h['hub.written'])
  .map((h) => [h['hub.committed'], h['hub.written']])
  .sort((a, b) => a[0] - b[0])
  .slice(SKIP);
const file = readdirSync(profDir).find((f) => f.endsWith('.cpuprofile'));
const prof = JSON.parse(readFileSync(path.join(profDir, file), 'utf8'));
rmSync(tmp, { recursive: true, force: true });
const nodes = new Map(prof.nodes.map((n) => [n.id, n]));
const parent = new Map();
for (const n of prof.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const where = (n) => `${n.callFrame.functionName || '(anonymous)'} ${path.basename(n.callFrame.url)}:${n.callFrame.lineNumber + 1}`;
const self = new Map();
const framed = new Map();
const stacks = new Map();
const add = (m, k, v) => m.set(k, (m.get(k) ?? 0) + v);
let t = prof.startTime;
let w = 0;
let sampled = 0;
for (let i = 0; i < prof.samples.length && w < windows.length; i++) {
  t += prof.timeDeltas[i];
  while (w < windows.length && windows[w][1] < t) w++;
  if (w >= windows.length || t < windows[w][0]) continue;
  const dt = prof.timeDeltas[i + 1] ?? 0;
  const leaf = nodes.get(prof.samples[i]);
  sampled += dt;
  add(self, where(leaf), dt);
  const seen = new Set();
  const chain = [];
  for (let id = leaf.id; id !== undefined; id = parent.get(id)) {
    const n = nodes.get(id);
    chain.push(n.callFrame.functionName || '(anonymous)');
    if (!seen.has(where(n))) add(framed, where(n), dt);
    seen.add(where(n));
  }
  add(stacks, chain.slice(0, 7).reverse().join(' > '), dt);
}
const per = (v) => (v / windows.length).toFixed(1).padStart(7);
const walls = windows.map(([a, b]) => b - a).sort((a, b) => a - b);
console.log(
  `${windows.length} pushes (the first ${SKIP} left out): COMMIT → written wall p50 ${walls[walls.length >> 1]} µs; sampled ${per(sampled).trim()} µs per push`,
);
for (const [title, m] of [
  ['self, µs per push', self],
  ['on the stack, µs per push', framed],
  ['stacks (root → leaf, the innermost 7 frames), µs per push', stacks],
]) {
  console.log(`-- ${title}`);
  for (const [k, v] of [...m].sort((a, b) => b[1] - a[1]).slice(0, TOP)) console.log(per(v), k);
}
