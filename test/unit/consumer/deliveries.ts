import { Ingest } from '../../../src/consumer/ingest.js';
import type { VerifyContext } from '../../../src/consumer/verify.js';
import { signEntry } from '../../../src/hub/contract/index.js';
import { Ledger, openStateDir, SeenJti, type Spool } from '../../../src/spool/index.js';
import { systemClock } from '../../../src/util/clock.js';

/** Our clock for the batches below: every delivery is signed at this instant. */
export const NOW = Date.now();

let n = 0;

/** A signed directive to agt_me's session sess_a, with a fresh jti each time. */
export const delivery = (id: string, over: Record<string, unknown> = {}) => {
  const entry = {
    id,
    kind: 'directive',
    from: 'human:acct_1',
    to: 'agent:agt_me#sess_a',
    created_at: '2026-09-18T14:18:00.000Z',
    text: `text of ${id}`,
    ...over,
  };
  return { entry, signature: signEntry('k', entry, Math.floor(NOW / 1000), `jti_${String(++n).padStart(16, '0')}`) };
};

/** Where such a batch arrived: sess_a's leg. */
export const arrived = { session: 'sess_a', address: 'agent:agt_me#sess_a' };

/** Verification as the consumer of sess_a runs it, against a seen-jti set. */
export const sessionContext = (seen: { has(jti: string): boolean }, admit: VerifyContext['admit'] = () => ({ admit: true })): VerifyContext => ({
  agentId: 'agt_me',
  leg: { leg: 'session', sessionId: 'sess_a' },
  replayWindowSeconds: 300,
  signatureAlgs: ['hmac-sha256'],
  nowMs: NOW,
  clock: null,
  seen: (j) => seen.has(j),
  admit,
});

/** A state entry in `dir` opened as the consumer opens it, with an Ingest over it (the lock's health switchable). */
export function openIngest(dir: string) {
  const entry = openStateDir(dir, { create: true });
  if (!entry.ok) throw new Error(entry.reason);
  const spool = entry.value.openSpool(systemClock);
  const ledger = Ledger.open(dir);
  const seen = SeenJti.load(dir);
  if (!spool.ok || !ledger.ok || !seen.ok) throw new Error('state did not open');
  const logs: string[] = [];
  let healthy = true;
  const ingest = new Ingest({ spool: spool.value, ledger: ledger.value, seen: seen.value, log: (t) => logs.push(t), lockHealthy: () => healthy });
  const ctx = (admit?: VerifyContext['admit']): VerifyContext => sessionContext(seen.value, admit);
  const close = () => {
    spool.value.close();
    ledger.value.close();
  };
  return { ingest, spool: spool.value as Spool, ledger: ledger.value, seen: seen.value, logs, ctx, close, unhealthy: () => (healthy = false) };
}
