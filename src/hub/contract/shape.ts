import { fail, ok, type Result } from '../../core/index.js';

/**
 * Field readers for wire data. Inside a parser they throw `ShapeError`; `guard` turns
 * that into a Result at the parser's boundary, so each parser reads as a plain list of
 * fields instead of a ladder of early returns.
 */
export class ShapeError extends Error {}

export type Obj = Record<string, unknown>;

export const isObj = (x: unknown): x is Obj => typeof x === 'object' && x !== null && !Array.isArray(x);

export function guard<T>(what: string, read: () => T): Result<T> {
  try {
    return ok(read());
  } catch (e) {
    if (e instanceof ShapeError) return fail(`${what}: ${e.message}`);
    throw e;
  }
}

export function bad(message: string): never {
  throw new ShapeError(message);
}

export const describe = (v: unknown): string => {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'string') return v.length > 40 ? `a string "${v.slice(0, 40)}…"` : `"${v}"`;
  return typeof v === 'object' ? 'an object' : `${typeof v} ${String(v)}`;
};

export function obj(v: unknown, where: string): Obj {
  if (!isObj(v)) bad(`${where} must be a JSON object, got ${describe(v)}`);
  return v;
}

export function str(o: Obj, key: string, where: string): string {
  const v = o[key];
  if (v === undefined) bad(`${where} is missing required field '${key}'`);
  if (typeof v !== 'string') bad(`${where} field '${key}' must be a string, got ${describe(v)}`);
  return v;
}

/** Absent or null → null. */
export function optStr(o: Obj, key: string, where: string): string | null {
  const v = o[key];
  if (v === undefined || v === null) return null;
  if (typeof v !== 'string') bad(`${where} field '${key}' must be a string, got ${describe(v)}`);
  return v;
}

export function num(o: Obj, key: string, where: string): number {
  const v = o[key];
  if (v === undefined) bad(`${where} is missing required field '${key}'`);
  if (typeof v !== 'number' || !Number.isFinite(v)) bad(`${where} field '${key}' must be a number, got ${describe(v)}`);
  return v;
}

/** A positive finite number (fractional allowed: test Hubs use sub-second holds); absent or null → null. */
export function optPositive(o: Obj, key: string, where: string): number | null {
  const v = o[key];
  if (v === undefined || v === null) return null;
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) {
    bad(`${where} field '${key}' must be a positive number, got ${describe(v)}`);
  }
  return v;
}

export function int(o: Obj, key: string, where: string): number {
  const v = num(o, key, where);
  if (!Number.isSafeInteger(v) || v < 0) bad(`${where} field '${key}' must be a non-negative integer, got ${describe(v)}`);
  return v;
}

export function bool(o: Obj, key: string, where: string): boolean {
  const v = o[key];
  if (v === undefined) bad(`${where} is missing required field '${key}'`);
  if (typeof v !== 'boolean') bad(`${where} field '${key}' must be true or false, got ${describe(v)}`);
  return v;
}

export function oneOf<T extends string>(o: Obj, key: string, allowed: readonly T[], where: string): T {
  const v = str(o, key, where);
  if (!(allowed as readonly string[]).includes(v)) {
    bad(`${where} field '${key}' is "${v}"; expected one of ${allowed.join(', ')}`);
  }
  return v as T;
}

export function optOneOf<T extends string>(o: Obj, key: string, allowed: readonly T[], where: string): T | null {
  if (o[key] === undefined || o[key] === null) return null;
  return oneOf(o, key, allowed, where);
}

export function arr(o: Obj, key: string, where: string): unknown[] {
  const v = o[key];
  if (v === undefined) bad(`${where} is missing required field '${key}'`);
  if (!Array.isArray(v)) bad(`${where} field '${key}' must be an array, got ${describe(v)}`);
  return v;
}

/** Wrap a Result-returning check so a failure throws inside a guarded parser. */
export function must<T>(r: Result<T>): T {
  if (!r.ok) bad(r.reason);
  return r.value;
}

export const utf8Bytes = (s: string): number => Buffer.byteLength(s, 'utf8');

const ISO_INSTANT = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/;

/** An ISO-8601 instant with an explicit zone whose calendar fields are real (no Feb 30). */
export function isIsoInstant(s: string): boolean {
  const m = ISO_INSTANT.exec(s);
  if (!m) return false;
  const [, y, mo, d, h, mi, se] = m.map(Number) as number[];
  if (Number.isNaN(Date.parse(s))) return false;
  const probe = new Date(Date.UTC(y!, mo! - 1, d!, h!, mi!, se!));
  return probe.getUTCMonth() === mo! - 1 && probe.getUTCDate() === d! && h! < 24 && mi! < 60 && se! < 60;
}

export function instant(o: Obj, key: string, where: string): string {
  const v = str(o, key, where);
  if (!isIsoInstant(v)) bad(`${where} field '${key}' must be an ISO-8601 instant like 2026-09-18T14:33:07.000Z, got ${describe(v)}`);
  return v;
}

export function optInstant(o: Obj, key: string, where: string): string | null {
  if (o[key] === undefined || o[key] === null) return null;
  return instant(o, key, where);
}
