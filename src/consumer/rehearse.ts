import { formatAddress } from '../hub/contract/index.js';
import { parseSpoolRecord, spoolLine } from '../spool/index.js';
import { verifyBatch, type VerifyContext } from './verify.js';

/**
 * Rounds that take the path out of V8's interpreter. Two compile it, but the deliveries after them
 * still ran interpreted, as dear as with no rehearsal (callgrind, one delivery at a time: ~0.84 M
 * instructions from the parsed delivery to the spool's write(2) and fsync after 2 rounds, ~0.41 M
 * after 40, Node 20; Node 24 alike). ~15 M instructions (4–5 ms of CPU) once per connection, run a
 * turn after the open (docs/performance.md "Push latency from the commit (session 9)").
 */
export const WARM_ROUNDS = 40;

/**
 * Runs what the connection runs for a delivery up to the spool's write(2) — the delivery's JSON,
 * every check of verifyBatch (signature syntax, replay window, jti, the entry's contract shape,
 * addressing), the spool line with its sum, and the re-read of that line the spool makes before
 * it writes — on a made-up delivery in memory, once per process, when its first stream opens.
 * The connection runs for hours, but its first delivery ran all of that for the first time: V8
 * compiled each function on its first call and each regular expression twice (2–4 ms of CPU on
 * that delivery, measured; ~0.5 ms on the ones after). Nothing is read, written, remembered or
 * acknowledged: the jti is not added to seen-jti and the policy is not asked (docs/performance.md
 * "Push latency"). Returns whether the made-up delivery passed everything (what a test checks).
 * Twice compiles the path; {@link WARM_ROUNDS} more take it out of V8's interpreter.
 */
export function rehearseDelivery(ctx: VerifyContext, rounds = 2): boolean {
  const to = ctx.leg.leg === 'session' ? formatAddress(ctx.agentId, ctx.leg.sessionId) : formatAddress(ctx.agentId);
  const t = Math.floor(ctx.nowMs / 1000);
  const receivedAt = new Date(ctx.nowMs).toISOString();
  const checks: VerifyContext = { ...ctx, seen: () => false, admit: () => ({ admit: true }) };
  let passed = false;
  for (let round = 1; round <= rounds; round++) {
    const delivery = {
      entry: {
        id: `ent_rehearsal_${round}`,
        kind: 'message',
        from: 'agent:agt_rehearsal#sess_rehearsal',
        to,
        created_at: receivedAt,
        thread_id: 'thr_rehearsal',
        message_id: `msg_rehearsal_${round}`,
        intent: 'notify',
        text: 'rehearsal',
      },
      signature: `t=${t},jti=rehearsal_jti_${round}_0000,alg=hmac-sha256,v1=${'0'.repeat(64)}`,
    };
    const verdict = verifyBatch([JSON.parse(JSON.stringify(delivery))], checks);
    const accepted = verdict.ok ? verdict.accepted[0] : undefined;
    if (accepted === undefined) return false;
    const line = spoolLine(round, receivedAt, { type: 'entry', session: to, entry: accepted.entry, signature: accepted.signature });
    passed = parseSpoolRecord(JSON.parse(line)).ok;
  }
  return passed;
}
