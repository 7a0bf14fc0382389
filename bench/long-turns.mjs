// What runs in a Hub's long turns of the event loop, from the V8 CPU profiles `bench/hub-cluster.mjs --cpu-prof <dir>`
// leaves in <dir> (one per Hub) with its phases' time windows. A turn is a run of samples with no idle sample between
// them (Node marks the loop's wait for I/O idle): its length is how long a socket that became readable during it (the
// listener's hint, a page's answer) waited for the loop. Per profile covering the phases: the turns' length
// distribution, the share of busy time in turns of each length, and what the long turns (--long, default 20 ms) were
// made of — each sample to the innermost frame on its stack that one of the kinds below names, else to the function
// the turn entered by (timers, immediates, a socket's read). Never run by CI.
//   node bench/long-turns.mjs <dir> [--phases send|idle] [--long 20] [--list 15]
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

const dir = process.argv[2];
if (!dir) throw new Error('usage: node bench/long-turns.mjs <dir written by hub-cluster.mjs --cpu-prof> [--phases send] [--long 20] [--list 15]');
const opt = (name, dflt) => {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? dflt : process.argv[i + 1];
};
const PHASES = opt('phases', 'send');
const LONG_US = Number(opt('long', 20)) * 1000;
const LIST = Number(opt('list', 15));
const windows = JSON.parse(readFileSync(path.join(dir, `${PHASES}-phases.json`), 'utf8'));
const inWindow = (t) => windows.some(([a, b]) => t >= a && t <= b);

/** Kinds of work by the functions that do them (the bundle keeps names; esbuild may add a digit); the innermost named frame wins. */
const KINDS = [
  ['gc', ['(garbage collector)']],
  ['pg: parse answers', ['parse', 'parseDataRowMessage', 'parseRowDescriptionMessage', 'handleDataRow', 'parseRow', 'handleRowDescription']],
  ['pg: write statements', ['sendQueryPrepared', 'bind', 'execute', 'prepareValue', 'submit']],
  ['page: read, sign, write', ['page', 'deliveryJson', 'readPage', 'claimPage']],
  ['stream connect', ['openStream', 'presentStream', 'presentSession']],
  ['stream end', ['finish', 'record']],
  ['stream hold timers', ['beat']],
  ['presence write', ['present', 'streamsSeen', 'held']],
  ['wake-ups (bus, listener)', ['deliver', 'emit', 'emitFamily', 'remoteWakes', 'parsePayload']],
  ['send', ['sendMessage', 'insertInOne', 'validateSend', 'bodyOf']],
  ['auth', ['authenticate', 'hashToken', 'agentByToken']],
  ['http parse', ['parserOnHeadersComplete', 'parserOnIncoming', 'parserOnBody', 'parserOnMessageComplete', 'execute']],
  ['routing', ['dispatch', 'route', 'match']],
  ['socket writes', ['writeGeneric', 'writevGeneric', '_writeGeneric', '_writev', 'write', 'end', 'writeHead']],
];
const kindOf = new Map(KINDS.flatMap(([kind, names]) => names.map((n) => [n, kind])));
const fnName = (n) => n.callFrame.functionName.replace(/\d+$/, '');

const pct = (v, of) => `${((100 * v) / of).toFixed(1)}%`.padStart(6);
const ms = (us) => (us / 1000).toFixed(1);

for (const file of readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'))) {
  const prof = JSON.parse(readFileSync(path.join(dir, file), 'utf8'));
  if (!windows.some(([a, b]) => prof.startTime <= b && prof.endTime >= a)) continue;
  const nodes = new Map(prof.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of prof.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  /** The sample's kind, and the frame just under the root (how its turn was entered). */
  const classify = (leafId) => {
    let kind = null;
    let entry = '(root)';
    for (let id = leafId; id !== undefined; id = parent.get(id)) {
      const n = nodes.get(id);
      kind ??= kindOf.get(fnName(n)) ?? null;
      if (parent.get(id) !== undefined && parent.get(parent.get(id)) === undefined) entry = fnName(n) || '(anonymous)';
    }
    return { kind, entry };
  };

  // Turns: runs of non-idle samples in the windows.
  const turns = [];
  let cur = null;
  let t = prof.startTime;
  let busy = 0;
  for (let i = 0; i < prof.samples.length; i++) {
    t += prof.timeDeltas[i];
    const dt = prof.timeDeltas[i + 1] ?? 0;
    const leaf = nodes.get(prof.samples[i]);
    if (!inWindow(t) || fnName(leaf) === '(idle)') {
      if (cur !== null) turns.push(cur);
      cur = null;
      continue;
    }
    cur ??= { start: t, us: 0, samples: [] };
    cur.us += dt;
    cur.samples.push([prof.samples[i], dt]);
    busy += dt;
  }
  if (cur !== null) turns.push(cur);
  const span = windows.reduce((s, [a, b]) => s + (b - a), 0);
  console.log(`${file}: ${turns.length} turns, busy ${ms(busy)} of ${ms(span)} ms in the ${PHASES} phases (${pct(busy, span)})`);
  const lengths = turns.map((x) => x.us).sort((a, b) => a - b);
  const q = (p) => ms(lengths[Math.min(lengths.length - 1, Math.floor(p * lengths.length))] ?? 0);
  console.log(`  turn length p50 ${q(0.5)}, p90 ${q(0.9)}, p99 ${q(0.99)}, max ${ms(lengths.at(-1) ?? 0)} ms`);
  for (const bound of [5, 10, 20, 40, 80]) {
    const inLong = turns.filter((x) => x.us >= bound * 1000);
    console.log(
      `  turns ≥ ${String(bound).padStart(2)} ms: ${String(inLong.length).padStart(5)}, ${pct(
        inLong.reduce((s, x) => s + x.us, 0),
        busy,
      )} of busy time`,
    );
  }
  const long = turns.filter((x) => x.us >= LONG_US);
  const longUs = long.reduce((s, x) => s + x.us, 0);
  const byKind = new Map();
  const byEntry = new Map();
  for (const turn of long)
    for (const [id, dt] of turn.samples) {
      const { kind, entry } = classify(id);
      const k = kind ?? `other, entered by ${entry}`;
      byKind.set(k, (byKind.get(k) ?? 0) + dt);
      byEntry.set(entry, (byEntry.get(entry) ?? 0) + dt);
    }
  console.log(`  the ${long.length} turns ≥ ${LONG_US / 1000} ms (${ms(longUs)} ms) by kind:`);
  for (const [k, v] of [...byKind].sort((a, b) => b[1] - a[1]).slice(0, 20)) console.log(`    ${pct(v, longUs)}  ${k}`);
  const bySelf = new Map();
  for (const turn of long)
    for (const [id, dt] of turn.samples) {
      const f = nodes.get(id).callFrame;
      const key = `${f.functionName || '(anonymous)'} (${f.url.split('/').pop() || 'native'}:${f.lineNumber + 1})`;
      bySelf.set(key, (bySelf.get(key) ?? 0) + dt);
    }
  console.log(`  … by the function on top of the stack (self time):`);
  for (const [k, v] of [...bySelf].sort((a, b) => b[1] - a[1]).slice(0, 25)) console.log(`    ${pct(v, longUs)}  ${k}`);
  console.log(`  … by how the turn's work was entered:`);
  for (const [k, v] of [...byEntry].sort((a, b) => b[1] - a[1]).slice(0, 10)) console.log(`    ${pct(v, longUs)}  ${k}`);
  console.log(`  the ${LIST} longest:`);
  for (const turn of [...long].sort((a, b) => b.us - a.us).slice(0, LIST)) {
    const k = new Map();
    for (const [id, dt] of turn.samples) {
      const { kind, entry } = classify(id);
      const key = kind ?? `other (${entry})`;
      k.set(key, (k.get(key) ?? 0) + dt);
    }
    const top = [...k]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 4)
      .map(([key, v]) => `${key} ${ms(v)}`)
      .join(', ');
    console.log(`    ${ms(turn.us).padStart(6)} ms at +${ms(turn.start - windows[0][0])}: ${top}`);
  }
}
