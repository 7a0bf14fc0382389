// Where a send's time goes on the Hub, from the V8 CPU profile that `bench/send-cost.mjs
// --cpu-prof <dir>` leaves in <dir> with the send phases' time windows: each sample taken in a
// send phase goes to the innermost frame on its stack that belongs to one of the steps below
// (parse, auth, validation, insert, commit, sign, push fan-out, respond, routing), else to
// "node (event loop, sockets, GC)"; idle samples are left out. A profile samples wall time on
// the main thread: time blocked in a system call counts (the COMMIT's fsync is under commit).
// bench/hub-cluster.mjs --cpu-prof <dir> writes its idle phases (streams, no sends) as well: --phases idle.
// Never run by CI.   node bench/cpu-profile-breakdown.mjs <dir> [--top 25] [--phases send|idle]
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { nameOf, windowedSamples } from './cpu-profile-samples.mjs';

const dir = process.argv[2];
if (!dir) throw new Error('usage: node bench/cpu-profile-breakdown.mjs <dir written by send-cost.mjs --cpu-prof>');
const topAt = process.argv.indexOf('--top');
const topN = topAt === -1 ? 25 : Number(process.argv[topAt + 1]);
const phasesAt = process.argv.indexOf('--phases');
const PHASES = phasesAt === -1 ? 'send' : process.argv[phasesAt + 1];
const windows = JSON.parse(readFileSync(path.join(dir, `${PHASES}-phases.json`), 'utf8'));
// The profile whose samples fall in the phases (a run may leave one per Hub it started).
const profiles = readdirSync(dir)
  .filter((f) => f.endsWith('.cpuprofile'))
  .map((f) => ({ f, p: JSON.parse(readFileSync(path.join(dir, f), 'utf8')) }));
const hit = profiles.find(({ p }) => windows.some(([a, b]) => p.startTime <= b && p.endTime >= a));
if (hit === undefined) throw new Error(`no .cpuprofile in ${dir} covers its ${PHASES} phases`);
const { f: file, p: prof } = hit;

/** Steps by the names of the functions that do them (the bundle keeps names; esbuild may add a digit). */
const STEPS = [
  ['parse', ['readBody', 'parserOnHeadersComplete', 'parserOnIncoming', 'parserOnBody', 'parserOnMessageComplete', 'URL']],
  ['auth', ['authenticate', 'tokenInUrl', 'agentByToken', 'presentedTokenHash', 'hashToken', 'checkKind', 'messagingEnabled']],
  ['validation', ['bodyOf', 'validateSend']],
  ['insert', ['sendMessage', 'insertMessage', 'insertEntry', 'resolveRecipient', 'messageById', 'findAgent', 'presentSession']],
  ['commit', ['flush', 'runUnit']],
  ['sign', ['sign', 'deliveryJson', 'signEntry', 'macHex', 'canonicalJson', 'newJti', 'entryOf']],
  ['push fan-out', ['page', 'pendingPage', 'pendingSeqs', 'push', 'wake']],
  ['stream connect and end', ['openStream', 'presentStream', 'registerStream', 'finish', 'StreamEnds']],
  ['respond', ['send', 'sentBody', 'messageJson']],
  ['routing', ['dispatch', 'route', 'match']],
];
const stepOf = new Map(STEPS.flatMap(([step, names]) => names.map((n) => [n, step])));
const { nodes, parent, samples, total } = windowedSamples(prof, windows);
const byStep = new Map();
const bySelf = new Map();
for (const { leaf, dt } of samples) {
  let step = 'node (event loop, sockets, GC)';
  for (let id = leaf.id; id !== undefined; id = parent.get(id)) {
    const s = stepOf.get(nameOf(nodes.get(id)));
    if (s !== undefined) {
      step = s;
      break;
    }
  }
  byStep.set(step, (byStep.get(step) ?? 0) + dt);
  const self = `${leaf.callFrame.functionName || '(anonymous)'} (${leaf.callFrame.url.split('/').pop() || 'native'})`;
  bySelf.set(self, (bySelf.get(self) ?? 0) + dt);
}
const pct = (v) => `${((100 * v) / total).toFixed(1)}%`.padStart(6);
console.log(`${file}: ${(total / 1000).toFixed(0)} ms of samples in ${windows.length} ${PHASES} phases (idle left out)`);
for (const [step, v] of [...byStep].sort((a, b) => b[1] - a[1])) console.log(`  ${pct(v)}  ${step}`);
console.log(`top ${topN} functions by self time:`);
for (const [fn, v] of [...bySelf].sort((a, b) => b[1] - a[1]).slice(0, topN)) console.log(`  ${pct(v)}  ${fn}`);
