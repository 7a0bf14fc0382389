import { createHmac, timingSafeEqual } from 'node:crypto';
import { fail, ok, type Result } from '../../core/index.js';
import type { ParsedSignature } from './types.js';

export const SIGNATURE_ALG = 'hmac-sha256';

const FIELD_ORDER = ['t', 'jti', 'alg', 'v1'] as const;
const JTI = /^[A-Za-z0-9_-]{16,128}$/;
const MAC_HEX = /^[0-9a-f]{64}$/;
const UNIX_SECONDS = /^(0|[1-9][0-9]*)$/;

/**
 * MA2H §7: exactly `t=<unix seconds>,jti=<[A-Za-z0-9_-]{16,128}>,alg=hmac-sha256,v1=<64 lowercase hex>`,
 * these four fields in this order. `acceptedAlgs` is the capability's `signature_algs`.
 */
export function parseSignature(value: string, acceptedAlgs: readonly string[] = [SIGNATURE_ALG]): Result<ParsedSignature> {
  if (value.length === 0) return fail('signature is empty');
  const parts = value.split(',');
  if (parts.length !== FIELD_ORDER.length) {
    return fail(`signature has ${parts.length} comma-separated fields; expected exactly t, jti, alg, v1`);
  }
  const values: string[] = [];
  for (const [i, part] of parts.entries()) {
    const name = FIELD_ORDER[i]!;
    if (!part.startsWith(`${name}=`)) {
      return fail(`signature field ${i + 1} is "${part.slice(0, 24)}"; expected ${name}=… (order t, jti, alg, v1, no spaces)`);
    }
    values.push(part.slice(name.length + 1));
  }
  const [t, jti, alg, v1] = values as [string, string, string, string];
  if (!UNIX_SECONDS.test(t) || !Number.isSafeInteger(Number(t))) {
    return fail(`signature t "${t}" must be a non-negative integer number of unix seconds`);
  }
  if (!JTI.test(jti)) return fail(`signature jti "${jti.slice(0, 40)}" must be 16–128 characters of A-Z a-z 0-9 _ -`);
  if (alg !== SIGNATURE_ALG) return fail(`signature alg "${alg}" is not ${SIGNATURE_ALG}, the only algorithm MA2H defines`);
  if (!acceptedAlgs.includes(alg)) {
    return fail(`signature alg "${alg}" is not among the Hub's advertised signature_algs (${acceptedAlgs.join(', ') || 'none'})`);
  }
  if (!MAC_HEX.test(v1)) return fail('signature v1 must be 64 lowercase hex characters');
  return ok({ t: Number(t), jti, alg, v1 });
}

export const formatSignature = (sig: ParsedSignature): string => `t=${sig.t},jti=${sig.jti},alg=${sig.alg},v1=${sig.v1}`;

/**
 * MA2H §12 canonical JSON: JSON.stringify escaping, object keys sorted by UTF-16 code
 * units at every depth, no whitespace. Values JSON cannot carry are a programming error.
 */
export function canonicalJson(v: unknown): string {
  if (v === null || typeof v === 'boolean' || typeof v === 'string') return JSON.stringify(v);
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) throw new TypeError(`canonicalJson: ${v} has no JSON form`);
    return JSON.stringify(v);
  }
  if (Array.isArray(v)) return `[${v.map((item) => (item === undefined ? 'null' : canonicalJson(item))).join(',')}]`;
  if (typeof v === 'object') {
    const o = v as Record<string, unknown>;
    // Default string comparison in JS is by UTF-16 code units, which is what §12 asks for.
    const keys = Object.keys(o)
      .filter((k) => o[k] !== undefined)
      .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(o[k])}`).join(',')}}`;
  }
  throw new TypeError(`canonicalJson: a ${typeof v} has no JSON form`);
}

/** v1 = hex HMAC-SHA256(utf8(key), "<t>.<jti>.<canonical entry>"). */
export const macHex = (key: string, t: number, jti: string, entry: unknown): string => macOfCanonical(key, t, jti, canonicalJson(entry));

/** v1 over an entry already in its canonical JSON text (the Hub stores entries so: no parse, no re-serialising). */
export function macOfCanonical(key: string, t: number, jti: string, canonical: string): string {
  // Two updates, not one concatenated string: an entry's canonical JSON can be ~400 KB.
  return createHmac('sha256', Buffer.from(key, 'utf8')).update(`${t}.${jti}.`, 'utf8').update(canonical, 'utf8').digest('hex');
}

/** The full signature value for one delivery of `entry` (the Hub's side). */
export const signEntry = (key: string, entry: unknown, t: number, jti: string): string => signCanonical(key, canonicalJson(entry), t, jti);

/** {@link signEntry} for an entry given as its canonical JSON text. */
export const signCanonical = (key: string, canonical: string, t: number, jti: string): string =>
  formatSignature({ t, jti, alg: SIGNATURE_ALG, v1: macOfCanonical(key, t, jti, canonical) });

/**
 * Recompute and compare the MAC. Only a holder of the Hub key can do this — the Hub
 * itself and tests; a client never has the key (MA2H §7).
 */
export function verifyMac(key: string, signature: string, entry: unknown): boolean {
  const parsed = parseSignature(signature);
  if (!parsed.ok) return false;
  const expected = Buffer.from(macHex(key, parsed.value.t, parsed.value.jti, entry), 'utf8');
  const given = Buffer.from(parsed.value.v1, 'utf8');
  return expected.length === given.length && timingSafeEqual(expected, given);
}
