// The mutating Hub (issue 18): a proxy in front of the reference Hub serves a real session
// but mutates the consumer's inbox traffic — status codes and error bodies, headers,
// SSE framing (CR/CRLF, BOM, comments, unknown events, chunk splits), truncation, stray
// bytes (invalid UTF-8, NUL, U+2028), stalls and hostile reconnect/closed events — and
// drives the REAL `oh-hai __consumer --mode direct` process through N mutated streams while
// a peer sends mail and the bench acts as the reader (prints = advances cursor.json). Then
// mutations stop and everything must drain. Checks: every exit is a documented code;
// every spooled line is sealed, well-formed, addressed to this agent, once per entry, and a
// message that was really sent; nothing acknowledged at the Hub is unprinted; nothing
// sent is lost. Exits 1 on any violation. Needs `npm run build`.
//   node bench/fuzz-consumer.mjs [--streams 10000] [--seed N] [--minutes M]
// `npm test` runs it with --streams 300 (test/integration/reliability/fuzz-consumer.test.ts).
import { spawn } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import { BRIDGE_EXIT_TABLE } from '../dist/core/exit.js';
import { validateEntry } from '../dist/hub/contract/entry.js';
import { SpoolReader, sealedSegments, sessionStateDir, stateKey } from '../dist/spool/index.js';
import { openLine } from '../dist/spool/line.js';
import { writeFileAtomic } from '../dist/util/fs-durable.js';
import { agentEnv, bin } from './bridge-world.mjs';
import { numberArg, pause, seeded, startKillableHub, stringArg } from './reliability-world.mjs';

const STREAMS = numberArg('--streams', 10_000);
const SEED = numberArg('--seed', Date.now() % 1_000_000);
const DRAIN_SECONDS = numberArg('--drain-seconds', 180);
// A bound on the mutating phase for a shared machine: the run stops mutating at it and says so.
const MINUTES = numberArg('--minutes', Infinity);
const rng = seeded(SEED);
console.log(`fuzz-consumer: seed ${SEED}, ${STREAMS} mutated streams (replay: node bench/fuzz-consumer.mjs --streams ${STREAMS} --seed ${SEED})`);

const DOCUMENTED = new Set(BRIDGE_EXIT_TABLE.map((r) => r.code));
const ERROR_CODES = [
  'unauthorized',
  'forbidden',
  'messaging_disabled',
  'session_held',
  'session_closed',
  'session_closed_by_operator',
  'session_lapsed',
  'session_not_found',
  'too_many_sessions',
  'rate_limited',
  'internal',
  'x-unknown',
];
const STATUSES = [400, 401, 403, 404, 408, 409, 410, 413, 429, 500, 502, 503, 504];
const JUNK = ['\u0000', '\uffff', '\u2028', '\r', '\n', '\n\n', '{', '"', ':', 'data: ', 'event: entries\n', '\ufeff'];

const hub = await startKillableHub(['--stream-max-hold-seconds', '0.3', '--keepalive-seconds', '0.1']);
const me = await hub.mint('fuzz-me');
const peer = await hub.mint('fuzz-peer');

let mutating = true;
let streams = 0;
const byKind = {};

/** One mutation for one inbox response, chosen by the seeded generator. */
function chooseMutation(isStream) {
  const kinds = ['status', 'headers', 'truncate', 'bytes', 'timing', ...(isStream ? ['framing', 'framing', 'events'] : [])];
  return rng.pick(kinds);
}

/**
 * A mutated error answer. Most are faults (retried inside one process); one in ten carries
 * a decision code (unauthorized, session_held, …) that stops the consumer with its
 * documented exit, and the bench starts it again — a restart costs far more than a retry.
 */
function errorAnswer(res) {
  const decision = rng.chance(0.1);
  const status = decision ? rng.pick([401, 403, 409, 410]) : rng.pick(STATUSES.filter((s) => ![401, 403, 409, 410].includes(s)));
  const code = decision ? rng.pick(ERROR_CODES.slice(0, 8)) : rng.pick(ERROR_CODES.slice(8));
  const body = rng.pick([
    () => JSON.stringify({ error: { code, message: 'mutated \u001b[2J answer' } }),
    () => '<html>502 Bad Gateway</html>',
    () => '',
    () => '{"error":',
    () => JSON.stringify({ error: { code: 42 } }),
  ])();
  const headers = { 'content-type': rng.chance(0.8) ? 'application/json' : 'text/html' };
  if (rng.chance(0.3)) headers['retry-after'] = rng.pick(['0', '1', 'soon', '-5', 'Wed, 21 Oct 2015 07:28:00 GMT']);
  res.writeHead(status, headers).end(body);
}

/** Alter an SSE text (latin1: bytes round-trip) without touching what JSON escapes inside data. */
function reframe(text) {
  switch (rng.int(0, 5)) {
    case 0:
      return text.replace(/\n/g, '\r\n');
    case 1:
      return text.replace(/\n/g, '\r');
    case 2:
      return text.replace(/\n\n/g, '\n: keep-alive comment\n\n');
    case 3:
      return text.replace(/\n\n/g, '\n\nevent: x-future\ndata: {"ignored":true}\n\nretry: 10\n\n');
    case 4:
      return text.replace(/event: (\w+)\ndata: ([^\n]*)\n\n/g, 'event: $1\ndata: $2\n\nevent: $1\ndata: $2\n\n');
    default:
      return text.replace(/\n\n$/, '\n');
  }
}

const HOSTILE_ENDS = [
  'event: reconnect\ndata: {"reason":"x-\u001b]52;c;aGk=\u0007"}\n\n',
  'event: reconnect\ndata: {"reason":"shutdown"}\n\n',
  'event: closed\ndata: {"reason":"x-unknown"}\n\n',
  'event: entries\ndata: {"messages":"not a list"}\n\n',
  'event: open\ndata: {}\n\n',
  'data: no event name\n\n',
];

function proxyRequest(req, res) {
  const isInbox = (req.url ?? '').startsWith('/v1/inbox');
  const isStream = (req.url ?? '').startsWith('/v1/inbox/stream');
  const isAck = (req.url ?? '').startsWith('/v1/inbox/ack');
  const mutation = mutating && isInbox && (!isAck || rng.chance(0.2)) && rng.chance(0.8) ? (isAck ? 'status' : chooseMutation(isStream)) : null;
  if (mutation) {
    streams += 1;
    byKind[mutation] = (byKind[mutation] ?? 0) + 1;
  }
  if (mutation === 'status') {
    req.resume();
    errorAnswer(res);
    return;
  }
  const up = new URL(hub.url);
  const out = http.request({ host: up.hostname, port: up.port, method: req.method, path: req.url, headers: { ...req.headers, host: up.host } }, (upRes) => {
    const headers = { ...upRes.headers };
    if (mutation === 'headers') {
      const r = rng.int(0, 3);
      if (r === 0) delete headers['content-type'];
      else if (r === 1) headers['content-type'] = 'text/plain';
      else if (r === 2) headers['content-type'] = isStream ? 'application/json' : 'text/event-stream';
      else headers['retry-after'] = 'garbage';
    }
    const startDelay = mutation === 'timing' ? rng.int(0, 400) : 0;
    setTimeout(() => {
      if (res.destroyed) return out.destroy();
      res.writeHead(upRes.statusCode ?? 502, headers);
      if (isStream) res.flushHeaders();
      let sent = 0;
      const cutAt = mutation === 'truncate' ? rng.int(0, 400) : Infinity;
      const junkAt = mutation === 'bytes' ? rng.int(0, 300) : -1;
      let junkDone = false;
      let framingMode = mutation === 'framing';
      const hostileEnd = mutation === 'events' ? rng.pick(HOSTILE_ENDS) : null;
      let eventsSeen = 0;
      upRes.on('data', (chunk) => {
        if (res.writableEnded) return;
        let bytes = chunk;
        if (framingMode) bytes = Buffer.from(reframe(chunk.toString('latin1')), 'latin1');
        if (junkAt >= 0 && !junkDone && sent + bytes.length > junkAt) {
          const at = junkAt - sent;
          const junk = rng.chance(0.3) ? Buffer.from([0xff, 0xc0]) : Buffer.from(rng.pick(JUNK), 'utf8');
          bytes = Buffer.concat([bytes.subarray(0, at), junk, bytes.subarray(at)]);
          junkDone = true;
        }
        if (hostileEnd && /\n\n/.test(chunk.toString('latin1'))) eventsSeen += 1;
        if (sent + bytes.length > cutAt) {
          res.write(bytes.subarray(0, cutAt - sent));
          if (rng.chance(0.5)) res.destroy();
          else res.end();
          out.destroy();
          return;
        }
        sent += bytes.length;
        // Arbitrary chunk splits: write in pieces, the framing split wherever it falls.
        if (framingMode && bytes.length > 1 && rng.chance(0.5)) {
          const at = rng.int(1, bytes.length - 1);
          res.write(bytes.subarray(0, at));
          setTimeout(() => !res.writableEnded && res.write(bytes.subarray(at)), rng.int(0, 20));
        } else res.write(bytes);
        if (hostileEnd && eventsSeen >= 1) {
          res.end(hostileEnd);
          out.destroy();
        }
        if (mutation === 'timing' && isStream && rng.chance(0.3)) {
          // A stall: stop forwarding for a while, then end without a reconnect (dropped mid-hold).
          framingMode = false;
          upRes.pause();
          setTimeout(
            () => {
              res.end();
              out.destroy();
            },
            rng.int(50, 600),
          );
        }
      });
      upRes.on('end', () => res.end());
      upRes.on('error', () => res.destroy());
    }, startDelay);
  });
  out.on('error', () => res.destroy());
  res.on('close', () => out.destroy());
  req.pipe(out);
}

const proxy = http.createServer(proxyRequest);
await new Promise((r) => proxy.listen(0, '127.0.0.1', r));
const proxyUrl = `http://127.0.0.1:${proxy.address().port}`;
const { env: base, tmp } = agentEnv(proxyUrl, me, 'fuzz');
// --retain-printed seals small segments and removes printed ones during the run (docs/spool.md).
const RETAIN = stringArg('--retain-printed');
const env = {
  ...base,
  OH_HAI_HEARTBEAT_MS: '200',
  OH_HAI_BACKOFF_MIN_MS: '5',
  OH_HAI_BACKOFF_MAX_MS: '40',
  OH_HAI_CURSOR_POLL_MS: '200',
  ...(RETAIN === null ? {} : { OH_HAI_RETAIN_PRINTED: RETAIN }),
};
const dir = sessionStateDir(env.XDG_STATE_HOME, stateKey(proxyUrl, me.id, 'fuzz'));

const sent = new Map(); // message id → text
const printedAt = new Map();
const exits = {};
const undocumented = [];
let consumer = null;
let running = true;

async function consumerLoop() {
  while (running) {
    const transport = rng.pick(['sse', 'sse', 'sse', 'poll']);
    const p = spawn(
      process.execPath,
      [bin, '__consumer', '--mode', 'direct', '--session', 'fuzz', '--transport', transport, '--interval', '0.1', '--max-retries', '1000000'],
      {
        env,
        stdio: ['ignore', 'ignore', 'pipe'],
      },
    );
    consumer = p;
    let err = '';
    p.stderr.setEncoding('utf8').on('data', (d) => (err = (err + d).slice(-2000)));
    const code = await new Promise((r) => p.once('close', (c, s) => r(c ?? s)));
    consumer = null;
    exits[code] = (exits[code] ?? 0) + 1;
    if (!(typeof code === 'number' && DOCUMENTED.has(code)) || code === 1) undocumented.push({ code, stderr: err.trim().split('\n').slice(-2).join(' | ') });
    if (running) await pause(rng.int(0, 30));
  }
}

async function sendLoop() {
  let n = 0;
  while (running && mutating) {
    const text = `fuzz message ${n++} \u2028 ${'x'.repeat(rng.int(0, 300))}`;
    try {
      const r = await hub.call(peer.token, 'POST', '/v1/messages', { to: `agent:${me.id}`, intent: 'notify', text });
      sent.set(r.message.id, text);
    } catch {
      /* the Hub is never killed here; a failed send is simply not counted */
    }
    await pause(rng.int(40, 160));
  }
}

/**
 * The reader: every record past the cursor is printed (noted), then the cursor moves past it.
 * Through the spool's own reader, so it follows the records into a new segment when one is sealed
 * (docs/spool.md: the cursor's offset is in the segment holding its seq).
 */
let cursor = { seq: 0, offset: 0 };
function readOnce() {
  let items;
  try {
    items = new SpoolReader(dir).readFrom(cursor);
  } catch {
    return;
  }
  for (const { record: rec, end } of items) {
    if (rec.type === 'entry' && rec.entry.message_id && !printedAt.has(rec.entry.message_id)) printedAt.set(rec.entry.message_id, Date.now());
    cursor = { seq: rec.seq, offset: end };
    writeFileAtomic(`${dir}/cursor.json`, JSON.stringify(cursor) + '\n', 0o600, 'none');
  }
}
const readerTimer = setInterval(readOnce, 50);

const started = Date.now();
const consumers = consumerLoop();
const sender = sendLoop();
let lastReport = 0;
const stopAt = started + MINUTES * 60_000;
while (streams < STREAMS && Date.now() < stopAt) {
  await pause(200);
  if (streams - lastReport >= Math.max(50, STREAMS / 20)) {
    lastReport = streams;
    console.log(
      `fuzz-consumer: ${streams}/${STREAMS} streams mutated in ${((Date.now() - started) / 1000).toFixed(0)} s; sent ${sent.size}, printed ${printedAt.size}`,
    );
  }
}
mutating = false;
await sender;
// Mutations off: a consumer that stopped on a mutated decision is started again by the loop; everything must drain.
const drainStarted = Date.now();
let drained = false;
const deadline = Date.now() + DRAIN_SECONDS * 1000;
let states = new Map();
while (Date.now() < deadline) {
  readOnce();
  states = await hub.sentStates(peer.token);
  if ([...sent.keys()].every((id) => printedAt.has(id) && states.get(id) === 'acknowledged')) {
    drained = true;
    break;
  }
  await pause(300);
}
running = false;
if (consumer) consumer.kill('SIGTERM');
await consumers;
clearInterval(readerTimer);

// Everything in the spool must have passed verification: sealed, a well-formed entry to this agent, once, and really sent.
const violations = [];
const seenIds = new Set();
let altered = 0;
// Every segment, sealed ones first (oldest first), then the current one.
const lines = [];
for (const file of [...sealedSegments(dir).map((s) => s.file), `${dir}/bridge.ndjson`]) {
  try {
    lines.push(
      ...readFileSync(file, 'utf8')
        .split('\n')
        .filter((l) => l !== ''),
    );
  } catch {
    /* a segment removed after it was printed and settled */
  }
}
let prevSeq = 0;
lines.forEach((line, i) => {
  const opened = openLine(line);
  if (!opened.ok) return violations.push(`line ${i + 1}: ${opened.reason}`);
  const rec = opened.value;
  // Contiguous across segments; the oldest kept may be past 1 where printed, settled segments were removed.
  if (i > 0 && rec.seq !== prevSeq + 1) violations.push(`line ${i + 1}: seq ${rec.seq} after ${prevSeq}`);
  prevSeq = rec.seq;
  if (rec.type !== 'entry') return;
  const e = validateEntry(rec.entry);
  if (!e.ok) return violations.push(`line ${i + 1}: not an MA2H entry: ${e.reason}`);
  if (!String(rec.entry.to).startsWith(`agent:${me.id}`)) violations.push(`line ${i + 1}: addressed to ${rec.entry.to}`);
  if (seenIds.has(rec.entry.id)) violations.push(`line ${i + 1}: entry ${rec.entry.id} spooled twice`);
  seenIds.add(rec.entry.id);
  if (!sent.has(rec.entry.message_id)) violations.push(`line ${i + 1}: message ${rec.entry.message_id} was never sent`);
  else if (sent.get(rec.entry.message_id) !== rec.entry.text) altered += 1;
});
const ackedUnprinted = [...states].filter(([id, s]) => s === 'acknowledged' && !printedAt.has(id)).length;
const lost = [...sent.keys()].filter((id) => !printedAt.has(id)).length;

proxy.closeAllConnections();
proxy.close();
await hub.stop();
rmSync(tmp, { recursive: true, force: true });

console.log(`fuzz-consumer: seed ${SEED}; ${((Date.now() - started) / 1000).toFixed(0)} s (final drain ${((Date.now() - drainStarted) / 1000).toFixed(0)} s)`);
console.log(
  `streams mutated: ${streams}${streams < STREAMS ? ` (stopped by --minutes ${MINUTES})` : ''} (${Object.entries(byKind)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ')})`,
);
console.log(
  `consumer exits: ${Object.entries(exits)
    .map(([c, n]) => `${c}×${n}`)
    .join(', ')}; undocumented or crashes: ${undocumented.length}${undocumented.length ? ' ' + JSON.stringify(undocumented.slice(0, 3)) : ''}`,
);
console.log(
  `messages: sent ${sent.size}, spooled ${seenIds.size}, printed ${printedAt.size}, lost ${lost}, acked-before-printed ${ackedUnprinted}, unverified in spool ${violations.length}, altered in transit ${altered}; drained: ${drained ? 'yes' : 'NO'}`,
);
if (violations.length) console.log(`violations: ${violations.slice(0, 5).join('; ')}`);
const ok = drained && lost === 0 && ackedUnprinted === 0 && violations.length === 0 && undocumented.length === 0;
console.log(`fuzz-consumer: ${ok ? 'PASS' : 'FAIL'} (seed ${SEED})`);
process.exit(ok ? 0 : 1);
