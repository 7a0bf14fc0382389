import { createHmac } from 'node:crypto';
import { freshJti } from './ids.js';

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/**
 * MA2H §12 canonical JSON: `JSON.stringify` escaping, object keys sorted by UTF-16 code
 * units at every depth (the default string sort compares code units), no whitespace.
 */
export function canonicalJson(v: Json): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson(v[k] as Json)}`)
      .join(',')}}`;
  }
  return JSON.stringify(v);
}

/** `HMAC-SHA256(key, "<t>.<jti>.<canonical entry>")` as 64 lowercase hex (§7). */
export function mac(key: string, t: number, jti: string, entry: Json): string {
  return createHmac('sha256', Buffer.from(key, 'utf8'))
    .update(`${t}.${jti}.${canonicalJson(entry)}`, 'utf8')
    .digest('hex');
}

/** A signature value, signed afresh: new `jti` every call, `t` integer seconds. */
export function signature(key: string, tSeconds: number, entry: Json): string {
  const t = Math.floor(tSeconds);
  const jti = freshJti();
  return `t=${t},jti=${jti},alg=hmac-sha256,v1=${mac(key, t, jti, entry)}`;
}
