import { createHash, randomBytes } from 'node:crypto';
import type { Clock } from '../../util/clock.js';

/** `sess_…`, `ent_…`, `msg_…`, `agt_…`, `acct_…`: opaque, URL-safe, no `#`. */
export const newId = (prefix: string): string => `${prefix}_${randomBytes(12).toString('hex')}`;

/** A replay key in the signature's jti grammar `[A-Za-z0-9_-]{16,128}`. */
export const newJti = (): string => `jti_${randomBytes(16).toString('base64url')}`;

/** Bearer tokens; `h` for the account's human, `a` for an agent. */
export const newToken = (kind: 'h' | 'a'): string => `ohh_${kind}_${randomBytes(32).toString('base64url')}`;

/** Tokens are stored only as this hash, so the store never holds a usable secret. */
export const hashToken = (token: string): string => createHash('sha256').update(token, 'utf8').digest('hex');

/** The Hub's clock: our real clock shifted by `--clock-offset-ms` (tests make the two disagree). */
export function hubClock(base: Clock, offsetMs: number): Clock {
  return { now: () => base.now() + offsetMs, monotonic: () => base.monotonic() };
}

export const iso = (ms: number): string => new Date(ms).toISOString();
