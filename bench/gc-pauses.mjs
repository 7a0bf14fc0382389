// The young generation's collections of each Hub, from the V8 trace `bench/hub-cluster.mjs --all-hub-flags --trace-gc-nvp
// --hub-out <dir>` leaves in <dir>: per Hub (its variant from the file's first line) the scavenges after --after seconds
// of its life (default 0), their pause p50 / max, what each copied (survived in the young
// generation + promoted, MB) and the pause per MB copied, and the parallel threads' time beside the main thread's; with
// --last, only the scavenges of the last <seconds> of each Hub's trace (a run's sends come last, then it stops its Hubs). A
// scavenge's pause is a turn of the event loop that every socket hop waits behind. Then each mark-compact in the same
// span, one line each: when, its pause split into V8's phases (the atomic marking, evacuation, clearing, the rest), the
// marking done before it (incremental steps on the main thread, concurrent on the helpers) and the heap before and after —
// under load the atomic pause, not the incremental steps, is what a push meets. Never run by CI.
//   node bench/gc-pauses.mjs <dir> [--after <seconds>] [--last <seconds>]
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

const dir = process.argv[2];
if (!dir) throw new Error('usage: node bench/gc-pauses.mjs <dir written by hub-cluster.mjs --hub-out> [--after <seconds>]');
const afterAt = process.argv.indexOf('--after');
const AFTER_MS = afterAt === -1 ? 0 : Number(process.argv[afterAt + 1]) * 1000;
const lastAt = process.argv.indexOf('--last');
const LAST_MS = lastAt === -1 ? Infinity : Number(process.argv[lastAt + 1]) * 1000;
const q = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))] ?? 0;
const sum = (xs) => xs.reduce((a, b) => a + b, 0);

for (const file of readdirSync(dir).filter((f) => f.endsWith('.out'))) {
  const text = readFileSync(path.join(dir, file), 'utf8');
  const variant = text.startsWith('# ') ? text.slice(2, text.indexOf('\n')) : '?';
  let scavenges = [];
  let compacts = [];
  for (const line of text.split('\n')) {
    const m = /^\[\d+:\w+\]\s+(\d+) ms: (.* gc=(s|mc) .*)$/.exec(line);
    if (m === null || Number(m[1]) < AFTER_MS) continue;
    const kv = Object.fromEntries(m[2].split(' ').map((x) => x.split('=')));
    if (m[3] === 'mc') {
      compacts.push({ at: Number(m[1]), kv });
      continue;
    }
    scavenges.push({
      at: Number(m[1]),
      pause: Number(kv.pause),
      main: Number(kv['scavenge.parallel']),
      background: Number(kv['background.scavenge.parallel']),
      copiedMb: (Number(kv.new_space_survived) + Number(kv.promoted)) / 2 ** 20,
    });
  }
  const end = Math.max(...scavenges.map((s) => s.at), ...compacts.map((c) => c.at));
  scavenges = scavenges.filter((s) => s.at >= end - LAST_MS);
  compacts = compacts.filter((c) => c.at >= end - LAST_MS);
  if (scavenges.length === 0) continue;
  const pauses = scavenges.map((s) => s.pause);
  console.log(
    `${file} (${variant}): ${scavenges.length} scavenges, pause p50 ${q(pauses, 0.5).toFixed(1)} max ${Math.max(...pauses).toFixed(1)} ms (${sum(pauses).toFixed(0)} ms in all); ` +
      `copied ${(sum(scavenges.map((s) => s.copiedMb)) / scavenges.length).toFixed(1)} MB each, ${(sum(pauses) / sum(scavenges.map((s) => s.copiedMb))).toFixed(1)} ms/MB; ` +
      `parallel phase main ${sum(scavenges.map((s) => s.main)).toFixed(0)} ms, helper threads ${sum(scavenges.map((s) => s.background)).toFixed(0)} ms`,
  );
  const mb = (bytes) => (Number(bytes) / 2 ** 20).toFixed(1);
  for (const { at, kv } of compacts) {
    const [pause, mark, evacuate, clear] = [kv.pause, kv.mark, kv.evacuate, kv.clear].map(Number);
    console.log(
      `  mark-compact at ${(at / 1000).toFixed(1)} s (${((end - at) / 1000).toFixed(1)} s before the trace's end): pause ${pause.toFixed(1)} ms ` +
        `(atomic mark ${mark.toFixed(1)}, evacuate ${evacuate.toFixed(1)}, clear ${clear.toFixed(1)}, the rest ${(pause - mark - evacuate - clear).toFixed(1)}); ` +
        `before it incremental ${Number(kv.incremental).toFixed(0)} ms in ${kv.incremental_steps_count} steps over ${kv.incremental_walltime_duration} ms, ` +
        `helpers' marking ${Number(kv['background.mark']).toFixed(0)} ms; heap ${mb(kv.total_size_before)} → ${mb(kv.total_size_after)} MB`,
    );
  }
}
