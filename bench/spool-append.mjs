// Spool append throughput: 10,000 entries of ~1 KB through Spool.append + Ledger.recordSpooled,
// at several batch sizes (a drain page or an SSE push is one batch: one write, one fsync each).
// Prints entries/s and fsyncs per entry. Needs `npm run build` first. Never run by CI.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Ledger, Spool } from '../dist/spool/index.js';

const TOTAL = Number(process.env.BENCH_ENTRIES ?? 10_000);
const clock = { now: () => Date.now(), monotonic: () => performance.now() };
const text = 'x'.repeat(900);

for (const batch of [1, 10, 100]) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'oh-hai-bench-'));
  try {
    const spool = Spool.open(dir, { clock });
    const ledger = Ledger.open(dir);
    if (!spool.ok || !ledger.ok) throw new Error('cannot open the spool');
    let fsyncs = 0;
    const t0 = performance.now();
    for (let n = 0; n < TOTAL; n += batch) {
      const records = [];
      for (let i = n; i < Math.min(n + batch, TOTAL); i++) {
        records.push({ type: 'entry', session: 'sess_bench', entry: { id: `e${i}`, kind: 'directive', text }, signature: 'sig' });
      }
      const written = spool.value.append(records);
      ledger.value.recordSpooled(written.map((r) => ({ id: r.entry.id, seq: r.seq, session: r.session })));
      fsyncs += 2;
    }
    const seconds = (performance.now() - t0) / 1000;
    console.log(
      `batch ${String(batch).padStart(3)}: ${TOTAL} entries in ${seconds.toFixed(2)} s = ${Math.round(TOTAL / seconds)} entries/s, ` +
        `${(fsyncs / TOTAL).toFixed(3)} fsyncs/entry (spool + ledger)`,
    );
    spool.value.close();
    ledger.value.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
