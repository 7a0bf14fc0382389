// What one process hand-off costs on this machine: an idle Node child woken by a pipe, and by
// fs.watch on a file this process appends to (how the connection's spool write wakes a reader),
// each answered on a pipe. A ping every 30 ms (or the interval given), so the child sleeps between
// them as a reader does; a connection or a reader waiting for mail sleeps far longer.
//   node bench/wake-floor.mjs [pings, default 200] [interval ms, default 30]
// Findings: docs/performance.md "Push latency from the commit (session 9)". Never run by CI.
import { spawn } from 'node:child_process';
import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
const dir = mkdtempSync(path.join(os.tmpdir(), 'oh-hai-wake-'));
const file = path.join(dir, 'spool');
writeFileSync(file, '');
const child = spawn(
  process.execPath,
  [
    '-e',
    `
  const fs = require('node:fs');
  process.stdin.on('data', () => process.stdout.write('p'));
  fs.watch(${JSON.stringify(file)}, () => process.stdout.write('w'));
`,
  ],
  { stdio: ['pipe', 'pipe', 'inherit'] },
);
let waiting = null;
child.stdout.on('data', (d) => {
  const t = process.hrtime.bigint();
  if (waiting) {
    const w = waiting;
    waiting = null;
    w(t);
  }
});
const once = (kick) =>
  new Promise((r) => {
    waiting = r;
    kick();
  });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
await sleep(300);
const pipe = [],
  watch = [];
const INTERVAL_MS = Number(process.argv[3] ?? 30);
for (let i = 0; i < Number(process.argv[2] ?? 200); i++) {
  await sleep(INTERVAL_MS);
  let t0 = process.hrtime.bigint();
  pipe.push(Number((await once(() => child.stdin.write('x'))) - t0) / 1e6);
  await sleep(INTERVAL_MS);
  t0 = process.hrtime.bigint();
  watch.push(Number((await once(() => appendFileSync(file, 'line\n'))) - t0) / 1e6);
}
child.kill();
rmSync(dir, { recursive: true, force: true });
const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))].toFixed(3);
};
console.log(
  `Node ${process.version}, load ${os.loadavg()[0].toFixed(1)}, every ${INTERVAL_MS} ms: pipe round trip (2 hand-offs) p50 ${pct(pipe, 50)} p99 ${pct(pipe, 99)} ms; append → fs.watch → pipe back p50 ${pct(watch, 50)} p99 ${pct(watch, 99)} ms`,
);
