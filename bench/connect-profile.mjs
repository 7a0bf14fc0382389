// Where a stream connect's Hub CPU goes, from the V8 CPU profile `bench/connect-cost.mjs --cpu-prof <dir>`
// leaves in <dir>/<label> with its window (idle-phases.json): every non-idle sample in the window goes to
// the innermost frame of its stack that names a step of a connect below, else to "other"; then the top
// functions by self time, and what calls writev (the socket writes: the statement's, the answer's).
// Never run by CI.   node bench/connect-profile.mjs <dir>/<label> [--top 30]
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { nameOf, windowedSamples } from './cpu-profile-samples.mjs';

const dir = process.argv[2];
if (!dir) throw new Error('usage: node bench/connect-profile.mjs <dir written by connect-cost.mjs --cpu-prof>/<label>');
const topAt = process.argv.indexOf('--top');
const topN = topAt === -1 ? 30 : Number(process.argv[topAt + 1]);
const windows = JSON.parse(readFileSync(path.join(dir, 'idle-phases.json'), 'utf8'));
const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
if (file === undefined) throw new Error(`no .cpuprofile in ${dir}`);
const prof = JSON.parse(readFileSync(path.join(dir, file), 'utf8'));

/** A connect's steps by the functions that do them (innermost match wins; the bundle keeps names, esbuild may add a digit). */
const STEPS = [
  ['HTTP parse (request line, headers, URL)', ['parserOnHeadersComplete', 'parserOnIncoming', 'parserOnHeaders', '_addHeaderLines', 'URL', 'parse', 'execute']],
  ['route and request set-up', ['dispatch', 'route', 'match', 'handle', 'streamRoute', 'consumerOf', 'requestOf']],
  ['credential (token hash)', ['presentedTokenHash', 'hashToken', 'authenticate', 'createHash', 'digest']],
  ['renewal: statement made and submitted', ['presentStream', 'bind', 'once', 'withClock', 'submit', 'retried', 'run', 'onLane', 'query', 'statements']],
  [
    'renewal: answer read and parsed',
    [
      'handleDataRow',
      'handleRowDescription',
      'handleCommandComplete',
      'handleReadyForQuery',
      'presentPaged',
      'pagesOf',
      'parseDataRowMessage',
      'handlePacket',
      'parseMessage',
      'handleMessage',
    ],
  ],
  ['stream set-up (handle, listeners, timer, bus)', ['openStream', 'registerStream', 'add', 'supersede', 'connected', 'on', 'hear', 'stop']],
  ['SSE open written (headers + open)', ['writeHead', '_storeHeader', 'setNoDelay', 'frame', 'write', '_writeRaw', '_send', 'iso']],
  ['the old response ended (reconnect event, end, ends)', ['finish', 'end', 'record', 'beat', '_finish', 'resOnFinish', 'onFinish', 'emitCloseNT']],
  ['first page pushed', ['page', 'deliveryJson', 'settle', 'grant', 'unheld', 'coalesced', 'wake']],
  ['timers', ['listOnTimeout', 'processTimers', 'setTimeout', 'clearTimeout', 'insert', 'unenroll']],
];
const stepOf = new Map();
for (const [step, names] of STEPS) for (const n of names) if (!stepOf.has(n)) stepOf.set(n, step);
const where = (n) => `${n.callFrame.functionName || '(anonymous)'} (${n.callFrame.url.split('/').pop() || 'native'})`;
const { nodes, parent, samples, total } = windowedSamples(prof, windows);
const byStep = new Map();
const bySelf = new Map();
const writevBy = new Map();
for (const { leaf, dt } of samples) {
  let step = nameOf(leaf) === '(garbage collector)' ? 'GC' : nameOf(leaf) === '(program)' ? '(program: native, outside JS)' : 'other';
  for (let id = leaf.id; id !== undefined && step === 'other'; id = parent.get(id)) {
    const s = stepOf.get(nameOf(nodes.get(id)));
    if (s !== undefined) step = s;
  }
  byStep.set(step, (byStep.get(step) ?? 0) + dt);
  bySelf.set(where(leaf), (bySelf.get(where(leaf)) ?? 0) + dt);
  if (nameOf(leaf) === 'writev' || nameOf(leaf) === 'writeUtf8String' || nameOf(leaf) === 'writeBuffer') {
    // The caller chain three JS frames up says which write it was.
    const chain = [];
    for (let id = parent.get(leaf.id); id !== undefined && chain.length < 14; id = parent.get(id)) chain.push(nameOf(nodes.get(id)));
    const key = `${nameOf(leaf)} ← ${chain.join(' ← ')}`;
    writevBy.set(key, (writevBy.get(key) ?? 0) + dt);
  }
}
const pct = (v) => `${((100 * v) / total).toFixed(1)}%`.padStart(6);
console.log(`${file}: ${(total / 1000).toFixed(0)} ms of samples in the window (idle left out)`);
for (const [step, v] of [...byStep].sort((a, b) => b[1] - a[1])) console.log(`  ${pct(v)}  ${step}`);
console.log(`top ${topN} functions by self time:`);
for (const [fn, v] of [...bySelf].sort((a, b) => b[1] - a[1]).slice(0, topN)) console.log(`  ${pct(v)}  ${fn}`);
console.log('socket writes by caller:');
for (const [k, v] of [...writevBy].sort((a, b) => b[1] - a[1]).slice(0, 12)) console.log(`  ${pct(v)}  ${k}`);
