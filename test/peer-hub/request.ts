import type { IncomingMessage } from 'node:http';
import type { Json } from './canonical.js';
import { Refusal, type Consumer } from './store.js';

/** Request-side parsing: bodies, fields, query numbers and the MA2H-Consumer header. Wire data is checked once, here. */

const MAX_BODY = 1024 * 1024;
type Obj = { [key: string]: Json };

export async function readJsonBody(req: IncomingMessage): Promise<Obj | Refusal> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const b = chunk as Buffer;
    size += b.length;
    if (size > MAX_BODY) return new Refusal(413, 'payload_too_large', `request bodies are at most ${MAX_BODY} bytes`);
    chunks.push(b);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.trim() === '') return {};
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return new Refusal(400, 'invalid_request', 'the request body is not valid JSON');
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return new Refusal(400, 'invalid_request', 'the request body must be a JSON object');
  return v as Obj;
}

const bad = (field: string, want: string): Refusal => new Refusal(400, 'invalid_request', `"${field}" must be ${want}`, { field });

/** Field readers: `undefined` in the body reads as null for optional fields. */
export const fields = {
  string(o: Obj, k: string): string | Refusal {
    const v = o[k];
    return typeof v === 'string' ? v : bad(k, 'a string');
  },
  optString(o: Obj, k: string): string | null | Refusal {
    const v = o[k];
    if (v === undefined || v === null) return null;
    return typeof v === 'string' ? v : bad(k, 'a string');
  },
  optNumber(o: Obj, k: string): number | null | Refusal {
    const v = o[k];
    if (v === undefined || v === null) return null;
    return typeof v === 'number' && Number.isFinite(v) && v > 0 ? v : bad(k, 'a positive number');
  },
  optInteger(o: Obj, k: string): number | null | Refusal {
    const v = o[k];
    if (v === undefined || v === null) return null;
    return typeof v === 'number' && Number.isInteger(v) ? v : bad(k, 'an integer');
  },
  boolean(o: Obj, k: string): boolean | Refusal {
    const v = o[k];
    return typeof v === 'boolean' ? v : bad(k, 'true or false');
  },
  optIds(o: Obj, k: string): string[] | Refusal {
    const v = o[k];
    if (v === undefined || v === null) return [];
    return Array.isArray(v) && v.every((x): x is string => typeof x === 'string') ? v : bad(k, 'an array of entry ids');
  },
};

type Reader<T> = (o: Obj, k: string) => T | Refusal;

/**
 * Read a body's fields, each named by its wire key with its reader from `fields`; the
 * refusal is the first field's in `schema` order.
 */
export function readFields<S extends { [key: string]: Reader<unknown> }>(
  o: Obj,
  schema: S,
): { [K in keyof S]: S[K] extends Reader<infer T> ? T : never } | Refusal {
  const out: { [key: string]: unknown } = {};
  for (const [k, read] of Object.entries(schema)) {
    const v = read(o, k);
    if (v instanceof Refusal) return v;
    out[k] = v;
  }
  return out as { [K in keyof S]: S[K] extends Reader<infer T> ? T : never };
}

/** A query number in [min, max], or the fallback when absent. */
export function queryNumber(q: URLSearchParams, k: string, fallback: number, min: number, max: number): number | Refusal {
  const raw = q.get(k);
  if (raw === null || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < min) return bad(k, `a number ≥ ${min}`);
  return Math.min(n, max);
}

const VALUE = /^[A-Za-z0-9._:-]{1,128}$/;

/** `MA2H-Consumer: home=<v>; host=<v>; pid=<integer>` (§12). Absent: not a consumer. Malformed: 400. */
export function parseConsumer(raw: string | undefined): Consumer | null | Refusal {
  if (raw === undefined) return null;
  const parts = new Map<string, string>();
  for (const piece of raw.split(';')) {
    const eq = piece.indexOf('=');
    if (eq < 0) return new Refusal(400, 'invalid_request', `malformed MA2H-Consumer header: ${JSON.stringify(raw)}`);
    parts.set(piece.slice(0, eq).trim(), piece.slice(eq + 1).trim());
  }
  const home = parts.get('home');
  const host = parts.get('host');
  const pid = parts.get('pid');
  if (home === undefined || host === undefined || pid === undefined || !VALUE.test(home) || !VALUE.test(host) || !/^\d{1,10}$/.test(pid) || parts.size !== 3) {
    return new Refusal(400, 'invalid_request', `malformed MA2H-Consumer header (want home=<v>; host=<v>; pid=<integer>): ${JSON.stringify(raw)}`);
  }
  return { home, host, pid: Number(pid) };
}

export function bearer(req: IncomingMessage): string | null {
  const h = req.headers.authorization;
  if (h === undefined) return null;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(h);
  return m ? m[1]! : null;
}
