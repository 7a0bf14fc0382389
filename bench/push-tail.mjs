// Where a run's slow pushes come from: every push of a `bench/hub-cluster.mjs --trace --trace-keep <dir>` run lined up,
// by its send's start, against what the Hubs did while it was under way (their trace's `ev.` lines), and each push
// slower than the run's p95 and p99 given the causes it met. Read the directory a run left (run-<n>/: bench.tsv,
// hub-<i>.trace). Never run by CI.
//   node bench/push-tail.mjs <dir>/run-<n> [--episodes 10]
//
// A push's window is its send's start to its arrival. The causes it can meet, each a marker:
//   start     its send started in the send phase's first second (the bench's scrapes just before, then C sends at once)
//   reconnect it reached its stream only on the stream's next connect (no hub.woken hop: written by the connect's first page)
//   major     a mark-compact of either Hub under way in the window
//   presence  a statement of either Hub's presence write under way in the window (ev.seen: its start and length; a
//             build without ev.seen: the write's first 300 ms after its ev.presence)
//   ends      a statement writing stream ends (ev.seen outside a presence write) under way in the window
//   connects  a 100 ms of the sends in the window in which either Hub began ≥ 1.5× the median stream connects
//   turn      either Hub's loop late by ≥ LONG_MS at a 20 ms sample in the window (ev.sample), with no collection of
//             that Hub inside the late stretch (a long turn of its own work: a scrape, a batch of connects, a page)
//   scavenge  a scavenge of either Hub under way in the window
//   hint      sent on one instance and held on the other, with the notifier's batch → the listener's hearing ≥ HINT_MS
// A marker met by many fast pushes as well explains little: each line says how many of ALL pushes met it, and the slow
// pushes in excess of what its pushes would give at the slow share of the pushes that did not meet it. The exclusive
// column gives each slow push to the first marker it met in the order above.
import { readFileSync } from 'node:fs';
import path from 'node:path';

const dir = process.argv[2];
if (!dir) throw new Error('usage: node bench/push-tail.mjs <hub-cluster.mjs --trace-keep dir>/run-<n> [--episodes 10]');
const opt = (name, dflt) => {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? dflt : Number(process.argv[i + 1]);
};
const EPISODES = opt('episodes', 10);
/** A 20 ms sample this late or more is a long turn of that Hub's loop. */
const LONG_MS = 30;
/** A hint heard this long after its batch was written counts as a slow hint. */
const HINT_MS = 10;
/** Without ev.seen (an older build): how long a presence write is taken to last from its ev.presence. */
const PRESENCE_GUESS_MS = 300;
const START_MS = 1000;

const [head, , ...rows] = readFileSync(path.join(dir, 'bench.tsv'), 'utf8').trim().split('\n');
const [, , w0s] = head.split(' ');
const w0 = BigInt(w0s);
const pushes = [];
for (const row of rows) {
  const [id, sent, arrived, , from, to] = row.split('\t');
  if (sent === '-' || arrived === '-') continue;
  pushes.push({ id, sent: BigInt(sent), arrived: BigInt(arrived), from: Number(from), to: Number(to), hops: {} });
}
const byId = new Map(pushes.map((p) => [p.id, p]));

// Intervals [a, b] in ns per kind, with the instance.
const ev = { major: [], scavenge: [], presence: [], ends: [], turn: [], batched: [], heard: [] };
const seenLines = { n: 0 };
const presenceStarts = [];
/** Per instance, the notifier's batches by their instant: how many mailboxes each woke (its NOTIFY transaction's size). */
const batchSize = [];
/** Every stream connect begun on either Hub. */
const connects = [];
for (let i = 0; ; i++) {
  let text;
  try {
    text = readFileSync(path.join(dir, `hub-${i}.trace`), 'utf8');
  } catch {
    break;
  }
  const note = (m, k, t) => (m.get(k) ?? m.set(k, []).get(k)).push(t);
  const batched = new Map();
  const heard = new Map();
  batchSize.push(new Map());
  for (const line of text.split('\n')) {
    const [ns, hop, id] = line.split(' ');
    if (hop === undefined) continue;
    const t = BigInt(ns);
    if (hop === 'ev.gc') {
      const [kind, us] = id.split(':');
      const iv = { a: t, b: t + BigInt(us) * 1000n, at: i, ms: Number(us) / 1000 };
      (kind === 'major' ? ev.major : ev.scavenge).push(iv);
    } else if (hop === 'ev.sample') {
      const late = Number(id.split(':')[0]) / 1000;
      if (late >= LONG_MS) ev.turn.push({ a: t - BigInt(Math.round(late * 1e6)), b: t, at: i, ms: late });
    } else if (hop === 'ev.seen') {
      const [n, us] = id.split(':');
      seenLines.n++;
      ev.presence.push({ a: t, b: t + BigInt(us) * 1000n, at: i, ms: Number(us) / 1000, rows: Number(n) });
    } else if (hop === 'ev.presence') presenceStarts.push({ t, at: i, rows: Number(id) });
    else if (hop === 'ev.batched') {
      note(batched, id.slice(id.indexOf('#') + 1), t);
      batchSize[i].set(t, (batchSize[i].get(t) ?? 0) + 1);
    } else if (hop === 'ev.connect') connects.push(t);
    else if (hop === 'ev.heard') note(heard, id.slice(id.indexOf('#') + 1), t);
    else {
      const p = byId.get(id);
      if (p !== undefined && p.hops[hop] === undefined) p.hops[hop] = t;
    }
  }
  ev.batched.push(batched);
  ev.heard.push(heard);
}
// A late sample with a collection of its Hub inside its interval is the collection's, not a turn of the Hub's own work.
const gcOf = [...ev.major, ...ev.scavenge];
ev.turn = ev.turn.filter((x) => !gcOf.some((g) => g.at === x.at && g.a <= x.b && g.b >= x.a));
// ev.seen is every statement of streamsSeen: the presence write's (a period's, after its ev.presence, in chunks of 500 or 100)
// and the stream ends' (a few rows a second). Each write's own chunks are taken in order from its instance's statements.
const seenAll = ev.presence;
ev.presence = [];
ev.ends = [];
const claimed = new Set();
for (const w of presenceStarts) {
  let left = w.rows;
  const after = seenAll.filter((x) => x.at === w.at && x.a >= w.t).sort((x, y) => (x.a < y.a ? -1 : 1));
  // Its statements' size: 500 sessions back to back, or the slices' 100 (sessions.ts PRESENCE_SLICE_ROWS).
  const chunk = [500, 100].find((c) => after.some((x) => !claimed.has(x) && x.rows === Math.min(c, w.rows))) ?? 500;
  for (const x of after) {
    if (left <= 0) break;
    if (!claimed.has(x) && x.rows === Math.min(chunk, left)) {
      claimed.add(x);
      ev.presence.push(x);
      left -= x.rows;
    }
  }
}
for (const x of seenAll) if (!claimed.has(x)) ev.ends.push(x);
if (seenLines.n === 0)
  for (const s of presenceStarts)
    if (s.rows > 0) ev.presence.push({ a: s.t, b: s.t + BigInt(PRESENCE_GUESS_MS) * 1_000_000n, at: s.at, ms: PRESENCE_GUESS_MS, rows: s.rows });

// The sessions each push went to: bench.tsv's session column.
for (const row of rows) {
  const [id, , , session] = row.split('\t');
  const p = byId.get(id);
  if (p !== undefined) p.session = session;
}
const firstAt = (ts, t) => (ts ?? []).filter((x) => x >= t).reduce((m, x) => (m === null || x < m ? x : m), null);

const ms = (a, b) => Number(b - a) / 1e6;
for (const p of pushes) p.total = ms(p.sent, p.arrived);
const sorted = pushes.map((p) => p.total).sort((a, b) => a - b);
const pct = (q) => sorted[Math.min(sorted.length - 1, Math.floor((q / 100) * sorted.length))];
const p50 = pct(50);
const p95 = pct(95);
const p99 = pct(99);

// Stream connects begun per 100 ms over the sends: a bin of 1.5× the median or more is a burst of connects renewing.
const wEnd = pushes.reduce((m, p) => (p.arrived > m ? p.arrived : m), w0);
const connectBins = Array.from({ length: Number((wEnd - w0) / 100_000_000n) + 1 }, (_, i) => ({ a: w0 + BigInt(i) * 100_000_000n, n: 0 }));
for (const t of connects) if (t >= w0 && t <= wEnd) connectBins[Number((t - w0) / 100_000_000n)].n++;
const binMedian = [...connectBins].map((b) => b.n).sort((a, b) => a - b)[Math.floor(connectBins.length / 2)] ?? 0;
const CONNECT_BURST = Math.max(1, Math.ceil(binMedian * 1.5));
const overlaps = (xs, p) => xs.some((x) => x.a <= p.arrived && x.b >= p.sent);
const MARKERS = [
  ['start', (p) => ms(w0, p.sent) < START_MS],
  ['reconnect', (p) => p.hops['hub.woken'] === undefined],
  ['major', (p) => overlaps(ev.major, p)],
  ['presence', (p) => overlaps(ev.presence, p)],
  ['ends', (p) => overlaps(ev.ends, p)],
  ['connects', (p) => connectBins.some((b) => b.n >= CONNECT_BURST && b.a <= p.arrived && b.a + 100_000_000n >= p.sent)],
  ['turn', (p) => overlaps(ev.turn, p)],
  ['scavenge', (p) => overlaps(ev.scavenge, p)],
  [
    'hint',
    (p) => {
      if (p.from === p.to || p.hops['hub.done'] === undefined) return false;
      const b = firstAt(ev.batched[p.from]?.get(p.session), p.hops['hub.done']);
      const h = b === null ? null : firstAt(ev.heard[p.to]?.get(p.session), b);
      if (b !== null) p.batch = batchSize[p.from].get(b);
      return b !== null && h !== null && ms(b, h) >= HINT_MS;
    },
  ],
];
for (const p of pushes) p.marks = MARKERS.filter(([, f]) => f(p)).map(([k]) => k);

console.log(
  `${dir}: ${pushes.length} pushes, p50 ${p50.toFixed(1)} ms, p95 ${p95.toFixed(1)}, p99 ${p99.toFixed(1)}; ` +
    `presence from ${seenLines.n > 0 ? `ev.seen (${ev.presence.length} statements)` : `ev.presence + ${PRESENCE_GUESS_MS} ms (older build)`}, ` +
    `${ev.ends.length} end statements, ${ev.major.length} mark-compacts, ${ev.scavenge.length} scavenges, ${ev.turn.length} samples late ≥ ${LONG_MS} ms`,
);
for (const [name, limit] of [
  ['> p95', p95],
  ['> p99', p99],
]) {
  const slow = pushes.filter((p) => p.total > limit);
  const none = pushes.filter((p) => p.marks.length === 0);
  console.log(`\n${name} (${limit.toFixed(1)} ms): ${slow.length} pushes; ${none.length} pushes met no marker`);
  console.log('  marker      slow met  share  all met  share  slow in excess  exclusive');
  const exclusive = new Map();
  for (const p of slow) {
    const k = p.marks[0] ?? 'none';
    exclusive.set(k, (exclusive.get(k) ?? 0) + 1);
  }
  for (const [k] of [...MARKERS, ['none']]) {
    const met = k === 'none' ? slow.filter((p) => p.marks.length === 0) : slow.filter((p) => p.marks.includes(k));
    const all = k === 'none' ? none : pushes.filter((p) => p.marks.includes(k));
    // In excess: more slow pushes met it than its pushes would give at the slow share of the pushes that did not meet it.
    const without = pushes.length - all.length;
    const rateWithout = without === 0 ? 0 : (slow.length - met.length) / without;
    const excess = k === 'none' ? null : met.length - rateWithout * all.length;
    console.log(
      `  ${k.padEnd(10)} ${String(met.length).padStart(9)}  ${((100 * met.length) / slow.length).toFixed(0).padStart(4)}%  ${String(all.length).padStart(7)}  ${((100 * all.length) / pushes.length).toFixed(0).padStart(4)}%  ${excess === null ? '             —' : `${excess.toFixed(0).padStart(5)} (${((100 * excess) / slow.length).toFixed(0).padStart(3)}%)`}  ${String(exclusive.get(k) ?? 0).padStart(9)} (${((100 * (exclusive.get(k) ?? 0)) / slow.length).toFixed(0)}%)`,
    );
  }
}

// The notifier's batch (one NOTIFY transaction) that carried each cross-instance push's hint: its size, slow against all.
const sizes = (xs) => {
  const b = xs.map((p) => p.batch).filter((n) => n !== undefined);
  return b.length === 0 ? '—' : `${(b.reduce((a, n) => a + n, 0) / b.length).toFixed(1)} mailboxes (${b.length} pushes)`;
};
console.log(
  `\nthe NOTIFY batch carrying a cross-instance push's hint, mean size: all ${sizes(pushes)}, > p95 ${sizes(pushes.filter((p) => p.total > p95))}, > p99 ${sizes(pushes.filter((p) => p.total > p99))}; stream connects per 100 ms over the sends: median ${binMedian}, a burst ≥ ${CONNECT_BURST}`,
);

// Slow pushes by their send's start, per 100 ms: the tail as episodes, each with what the Hubs did then.
const bins = new Map();
for (const p of pushes) {
  const b = Math.floor(ms(w0, p.sent) / 100);
  const x = bins.get(b) ?? { n: 0, slow: 0, max: 0 };
  x.n++;
  if (p.total > p99) x.slow++;
  x.max = Math.max(x.max, p.total);
  bins.set(b, x);
}
const inBin = (xs, b) => xs.filter((x) => ms(w0, x.b) >= b * 100 - 150 && ms(w0, x.a) < b * 100 + 250);
console.log(`\nthe ${EPISODES} 100 ms windows with the most pushes > p99 (by the send's start; events from 150 ms before to 250 ms after):`);
for (const [b, x] of [...bins].sort(([, x], [, y]) => y.slow - x.slow || y.max - x.max).slice(0, EPISODES)) {
  const says = [
    ...inBin(ev.presence, b).map((e) => `presence@${e.at} ${e.rows} rows ${e.ms.toFixed(0)} ms`),
    ...inBin(ev.major, b).map((e) => `major@${e.at} ${e.ms.toFixed(1)} ms`),
    ...inBin(ev.scavenge, b).map((e) => `scavenge@${e.at} ${e.ms.toFixed(1)} ms`),
    ...inBin(ev.turn, b).map((e) => `late@${e.at} ${e.ms.toFixed(0)} ms`),
  ];
  console.log(
    `  ${(b / 10).toFixed(1).padStart(5)} s: ${x.slow}/${x.n} > p99, max ${x.max.toFixed(0)} ms; ${says.length === 0 ? 'nothing traced' : says.join(', ')}`,
  );
}
// The presence writes themselves: when, how many rows, how long, per instance.
if (ev.presence.length > 0) {
  const w = ev.presence.filter((e) => ms(w0, e.a) > -1000);
  console.log(
    `\npresence statements from the sends' start: ${w.map((e) => `@${e.at} ${(ms(w0, e.a) / 1000).toFixed(2)} s ${e.rows} rows ${e.ms.toFixed(0)} ms`).join('; ')}`,
  );
}
