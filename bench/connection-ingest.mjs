// Instructions per delivery of the background connection's ingest (verify → dedup → the spool's
// write(2) and fsync), one parsed delivery at a time after the rehearsal, as the latency bench
// sends them; real Spool, Ledger and SeenJti in a temp dir. Count with callgrind and subtract:
//   valgrind --tool=callgrind --callgrind-out-file=/dev/null node --random-seed=7 bench/connection-ingest.mjs <N>
// for N = 1 and 21, (21 − 1) / 20. The harness's own signing and JSON (~0.25 M on Node 20) are in it.
// OH_HAI_REHEARSAL=2 rehearses as session 8 did (2 rounds only). Needs `npm run build`. Never run by CI.
// Findings: docs/performance.md "Push latency from the commit (session 9)".
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const N = Number(process.argv[2] ?? 21);
const { Ingest } = await import(`${root}/dist/consumer/ingest.js`);
const { rehearseDelivery, WARM_ROUNDS } = await import(`${root}/dist/consumer/rehearse.js`);
const { signEntry } = await import(`${root}/dist/hub/contract/index.js`);
const { Ledger, openStateDir, SeenJti } = await import(`${root}/dist/spool/index.js`);
const { systemClock } = await import(`${root}/dist/util/clock.js`);
const dir = mkdtempSync(path.join(os.tmpdir(), 'push-ingest-'));
const entryDir = openStateDir(dir, { create: true });
const spool = entryDir.value.openSpool(systemClock).value;
const ledger = Ledger.open(dir).value;
const seen = SeenJti.load(dir).value;
const ingest = new Ingest({ spool, ledger, seen, log: () => {}, lockHealthy: () => true });
const NOW = Date.now();
const ctx = () => ({
  agentId: 'agt_me',
  leg: { leg: 'session', sessionId: 'sess_a' },
  replayWindowSeconds: 300,
  signatureAlgs: ['hmac-sha256'],
  nowMs: Date.now(),
  clock: null,
  seen: (j) => seen.has(j),
  admit: () => ({ admit: true }),
});
const arrived = { session: 'sess_a', address: 'agent:agt_me#sess_a' };
const made = [];
for (let i = 0; i < N; i++) {
  const entry = {
    id: `ent_${String(i).padStart(24, '0')}`,
    kind: 'message',
    from: 'agent:agt_sender00000000000000#sess_sender0000000000',
    to: 'agent:agt_me#sess_a',
    created_at: new Date().toISOString(),
    thread_id: `thr_${i}`,
    message_id: `msg_${String(i).padStart(24, '0')}`,
    intent: 'notify',
    text: `latency sample ${i}`,
  };
  made.push(JSON.stringify({ messages: [{ entry, signature: signEntry('k', entry, Math.floor(NOW / 1000), `jti_${String(i).padStart(20, '0')}`) }] }));
}
// As the connection does at its first stream's open (src/consumer/consumer.ts).
rehearseDelivery(ctx());
if (process.env.OH_HAI_REHEARSAL !== '2') rehearseDelivery(ctx(), WARM_ROUNDS);
for (let i = 0; i < N; i++) {
  const raws = JSON.parse(made[i]).messages; // as the stream hands them over
  const r = ingest.run(raws, arrived, ctx());
  if (!r.ok || r.spooled !== 1) throw new Error('not spooled');
}
spool.close();
ledger.close();
rmSync(dir, { recursive: true, force: true });
