import { fail, ok, type Result } from '../../core/index.js';
import type { ConsumerIdentity } from './types.js';

export const CONSUMER_HEADER = 'MA2H-Consumer';

const VALUE = /^[A-Za-z0-9._:-]{1,128}$/;
const PID = /^[1-9][0-9]{0,9}$/;
const KEYS = ['home', 'host', 'pid'] as const;

/**
 * MA2H §12: `home=<v>; host=<v>; pid=<integer>`, values `[A-Za-z0-9._:-]{1,128}`, no
 * quoting. We accept the three keys once each, in any order, with optional spaces
 * around the `;`.
 */
export function parseConsumerHeader(v: string): Result<ConsumerIdentity> {
  const seen = new Map<string, string>();
  for (const raw of v.split(';')) {
    const part = raw.trim();
    const eq = part.indexOf('=');
    if (eq <= 0) return fail(`${CONSUMER_HEADER} part "${part.slice(0, 40)}" is not key=value`);
    const key = part.slice(0, eq);
    const value = part.slice(eq + 1);
    if (!(KEYS as readonly string[]).includes(key)) return fail(`${CONSUMER_HEADER} has unknown key '${key.slice(0, 40)}'; expected home, host, pid`);
    if (seen.has(key)) return fail(`${CONSUMER_HEADER} repeats key '${key}'`);
    seen.set(key, value);
  }
  for (const key of KEYS) {
    if (!seen.has(key)) return fail(`${CONSUMER_HEADER} is missing '${key}=' (format: home=<v>; host=<v>; pid=<integer>)`);
  }
  const home = seen.get('home')!;
  const host = seen.get('host')!;
  const pid = seen.get('pid')!;
  for (const [key, value] of [
    ['home', home],
    ['host', host],
  ] as const) {
    if (!VALUE.test(value)) return fail(`${CONSUMER_HEADER} ${key} must be 1–128 characters of A-Z a-z 0-9 . _ : -`);
  }
  if (!PID.test(pid)) return fail(`${CONSUMER_HEADER} pid "${pid.slice(0, 20)}" must be a positive integer`);
  return ok({ home, host, pid: Number(pid) });
}

/** Make any string fit the header's value grammar (hostnames may carry other characters). */
export function sanitizeHeaderValue(s: string): string {
  const cleaned = s.replace(/[^A-Za-z0-9._:-]/g, '-').slice(0, 128);
  return cleaned.length > 0 ? cleaned : 'unknown';
}

export function formatConsumerHeader(c: ConsumerIdentity): string {
  if (!Number.isSafeInteger(c.pid) || c.pid < 1) throw new RangeError(`consumer pid ${c.pid} is not a positive integer`);
  return `home=${sanitizeHeaderValue(c.home)}; host=${sanitizeHeaderValue(c.host)}; pid=${c.pid}`;
}
