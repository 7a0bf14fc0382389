import { createHash, randomBytes, randomFillSync } from 'node:crypto';
import type { Clock } from '../../util/clock.js';

/**
 * Random bytes for ids and jtis, drawn from a buffer refilled from the CSPRNG 4 KiB at a time
 * (as Node's randomUUID does): a send takes three ids and every delivery a jti, and one call
 * into OpenSSL per id cost more than the id. A byte is handed out once. Tokens, which are
 * secrets, are drawn fresh.
 */
const pool = Buffer.allocUnsafe(4096);
let used = pool.length;
function pooled(n: number): Buffer {
  if (used + n > pool.length) {
    randomFillSync(pool);
    used = 0;
  }
  used += n;
  return pool.subarray(used - n, used);
}

/** `sess_…`, `ent_…`, `msg_…`, `agt_…`, `acct_…`: opaque, URL-safe, no `#`. */
export const newId = (prefix: string): string => `${prefix}_${pooled(12).toString('hex')}`;

/** A replay key in the signature's jti grammar `[A-Za-z0-9_-]{16,128}`. */
export const newJti = (): string => `jti_${pooled(16).toString('base64url')}`;

/** Bearer tokens; `h` for the account's human, `a` for an agent. */
export const newToken = (kind: 'h' | 'a'): string => `ohh_${kind}_${randomBytes(32).toString('base64url')}`;

/** Tokens are stored only as this hash, so the store never holds a usable secret. */
export const hashToken = (token: string): string => createHash('sha256').update(token, 'utf8').digest('hex');

/**
 * The hashes of the bearer tokens presented lately: a client presents the same token on every
 * request, and hashing it each time was a digest per request for the same answer. Bounded: when
 * full it starts over. Only this process's memory holds the tokens, as the requests did.
 */
const presented = new Map<string, string>();
const PRESENTED_MAX = 4096;
export function presentedTokenHash(token: string): string {
  let hash = presented.get(token);
  if (hash === undefined) {
    if (presented.size >= PRESENTED_MAX) presented.clear();
    presented.set(token, (hash = hashToken(token)));
  }
  return hash;
}

/** The Hub's clock: our real clock shifted by `--clock-offset-ms` (tests make the two disagree). */
export function hubClock(base: Clock, offsetMs: number): Clock {
  return { now: () => base.now() + offsetMs, monotonic: () => base.monotonic() };
}

export const iso = (ms: number): string => new Date(ms).toISOString();
