import { parseAddress, parseSignature, splitDelivery, validateEntry, formatAddress, type Entry } from '../hub/contract/index.js';

/**
 * Verification, in the product doc's order, before anything is spooled: signature syntax;
 * `t` inside the replay window; `jti` unseen; the §7 shape; addressed to this agent and
 * this session (or, on the principal leg, to the agent itself); the sender policy. A
 * failure of the first five is a `reject` (possible tampering: the consumer stops with 12);
 * a policy refusal is a `refuse` (routing policy, not tampering: the entry stays unacked).
 */
export type Leg = { leg: 'session'; sessionId: string } | { leg: 'principal' };

export type VerifyCheck = 'delivery' | 'signature_syntax' | 'replay_window' | 'jti_replayed' | 'entry_shape' | 'addressing';

export interface ClockReading {
  /** The Hub's clock minus ours, in ms. */
  offsetMs: number;
  /** Where it was measured, e.g. "the Hub's Date header at 2026-…Z". */
  source: string;
}

export interface VerifyContext {
  agentId: string;
  leg: Leg;
  replayWindowSeconds: number;
  signatureAlgs: readonly string[];
  /** Our clock, ms. */
  nowMs: number;
  clock: ClockReading | null;
  seen(jti: string): boolean;
  admit(entry: Entry): { admit: true } | { admit: false; reason: string };
}

export interface Signed {
  entry: Entry;
  signature: string;
  jti: string;
  t: number;
}

export type Verdict = ({ verdict: 'accept' } & Signed) | ({ verdict: 'refuse'; reason: string } & Signed) | Rejection;

export interface Rejection {
  verdict: 'reject';
  check: VerifyCheck;
  entryId: string;
  message: string;
}

const iso = (ms: number): string => new Date(ms).toISOString();
const seconds = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;
const signed = (ms: number): string => `${ms >= 0 ? '+' : '−'}${seconds(Math.abs(ms))}`;

const field = (x: unknown, key: string): unknown => (typeof x === 'object' && x !== null ? Reflect.get(x, key) : undefined);

/** The entry id to name in a rejection, read before the delivery is known to be well-formed. */
function rawEntryId(raw: unknown): string {
  const id = field(field(raw, 'entry'), 'id');
  return typeof id === 'string' ? id : '(no entry id)';
}

/** Why `t` is outside the window, told apart from a wrong local clock when the Hub's clock was read. */
export function staleTimestampMessage(t: number, ctx: Pick<VerifyContext, 'nowMs' | 'replayWindowSeconds' | 'clock'>): string {
  const skewMs = ctx.nowMs - t * 1000;
  const direction = skewMs >= 0 ? `${seconds(skewMs)} older than` : `${seconds(-skewMs)} ahead of`;
  const head = `t=${t} (${iso(t * 1000)}) is ${direction} our clock (${iso(ctx.nowMs)}), outside the ${ctx.replayWindowSeconds} s replay window.`;
  if (ctx.clock === null) {
    return `${head} The Hub's clock was never read, so a wrong local clock cannot be ruled out: compare this machine's time with a trusted source before treating this as tampering.`;
  }
  const hubSkewMs = skewMs + ctx.clock.offsetMs;
  const offset = `The Hub's clock reads ${signed(ctx.clock.offsetMs)} relative to ours (measured from ${ctx.clock.source})`;
  if (Math.abs(hubSkewMs) <= ctx.replayWindowSeconds * 1000) {
    return `${head} ${offset}; by the Hub's clock t is only ${seconds(Math.abs(hubSkewMs))} off, so the two clocks disagree rather than the entry being replayed: check this machine's time (NTP) and the Hub's.`;
  }
  return `${head} ${offset}, so the clocks agree and t itself is out of the window: a replayed or tampered delivery.`;
}

export function verifyDelivery(raw: unknown, ctx: VerifyContext, seenInBatch: ReadonlySet<string> = new Set()): Verdict {
  const entryId = rawEntryId(raw);
  const reject = (check: VerifyCheck, detail: string): Rejection => ({
    verdict: 'reject',
    check,
    entryId,
    message: `entry ${entryId} failed verification (${check}): ${detail}`,
  });
  const delivery = splitDelivery(raw);
  if (!delivery.ok) return reject('delivery', delivery.reason);
  const { signature } = delivery.value;
  const sig = parseSignature(signature, ctx.signatureAlgs);
  if (!sig.ok) return reject('signature_syntax', `${sig.reason} (signature ${JSON.stringify(signature.slice(0, 200))})`);
  const { t, jti } = sig.value;
  if (Math.abs(ctx.nowMs - t * 1000) > ctx.replayWindowSeconds * 1000) return reject('replay_window', staleTimestampMessage(t, ctx));
  if (ctx.seen(jti) || seenInBatch.has(jti)) {
    return reject('jti_replayed', `jti ${jti} (t=${t}) was already used by an earlier delivery; every delivery must carry a fresh jti`);
  }
  const shaped = validateEntry(delivery.value.entry);
  if (!shaped.ok) return reject('entry_shape', shaped.reason);
  const entry = shaped.value;
  const addressing = checkAddressing(entry, ctx);
  if (addressing !== null) return reject('addressing', addressing);
  const base: Signed = { entry, signature, jti, t };
  const admission = ctx.admit(entry);
  if (!admission.admit) return { verdict: 'refuse', reason: admission.reason, ...base };
  return { verdict: 'accept', ...base };
}

function checkAddressing(entry: Entry, ctx: VerifyContext): string | null {
  const to = parseAddress(entry.to, 'to');
  if (!to.ok) return to.reason;
  const mine = formatAddress(ctx.agentId);
  if (to.value.agentId !== ctx.agentId) return `addressed to ${entry.to}, but this consumer drains ${mine}, another agent`;
  if (ctx.leg.leg === 'principal') {
    return to.value.sessionId === null ? null : `addressed to the session ${entry.to}, but the principal drain takes only entries addressed to ${mine}`;
  }
  // A principal-addressed entry is claimable by any live session of the agent (first-claim-wins).
  if (to.value.sessionId === null || to.value.sessionId === ctx.leg.sessionId) return null;
  return `addressed to ${entry.to}, but this consumer drains ${formatAddress(ctx.agentId, ctx.leg.sessionId)}; an entry for another or a prior session is refused`;
}

export type BatchVerdict = { ok: true; accepted: Signed[]; refused: (Signed & { reason: string })[] } | { ok: false; rejection: Rejection };

/**
 * A batch is verified whole before any of it is spooled: one rejected delivery stops the
 * consumer and nothing from that batch reaches the spool. A jti repeated inside the batch
 * is a replay too.
 */
export function verifyBatch(raws: readonly unknown[], ctx: VerifyContext): BatchVerdict {
  const accepted: Signed[] = [];
  const refused: (Signed & { reason: string })[] = [];
  const jtis = new Set<string>();
  for (const raw of raws) {
    const v = verifyDelivery(raw, ctx, jtis);
    if (v.verdict === 'reject') return { ok: false, rejection: v };
    jtis.add(v.jti);
    if (v.verdict === 'refuse') refused.push({ entry: v.entry, signature: v.signature, jti: v.jti, t: v.t, reason: v.reason });
    else accepted.push({ entry: v.entry, signature: v.signature, jti: v.jti, t: v.t });
  }
  return { ok: true, accepted, refused };
}
