import { fail, ok, type Result } from '../core/index.js';

/**
 * The one validator kit (parse, don't cast): wire data (src/hub/contract) and state-entry
 * records (src/spool) are read with these field readers, with one wording of what is wrong.
 * Inside a parser they throw `ShapeError`; `guard` turns that into a Result at the parser's
 * boundary, so each parser reads as a plain list of fields instead of a ladder of early
 * returns. `Fields` is the same readers for a parser that builds its value in one
 * expression: it keeps the first problem and hands out placeholders after it.
 */
export class ShapeError extends Error {}

export type Obj = Record<string, unknown>;

export const isObj = (x: unknown): x is Obj => typeof x === 'object' && x !== null && !Array.isArray(x);

/** `what` names the value in a failure; a function is asked only then (a label built per call costs a hot parser). */
export function guard<T>(what: string | (() => string), read: () => T): Result<T> {
  try {
    return ok(read());
  } catch (e) {
    if (e instanceof ShapeError) return fail(`${typeof what === 'string' ? what : what()}: ${e.message}`);
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

const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:Z|[+-]\d{2}:\d{2})$/;

/** The two ASCII digits at `i` (the shape is checked first). */
const twoDigits = (s: string, i: number): number => (s.charCodeAt(i) - 48) * 10 + (s.charCodeAt(i + 1) - 48);

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/**
 * An ISO-8601 instant with an explicit zone whose calendar fields are real (no Feb 30): the
 * shape, then each field by its digits. Every entry a reader prints is checked, so this avoids
 * Date.parse and a Date per call. What it accepts is exactly what the Date-based check before
 * it accepted (test/unit/util/iso-instant.test.ts holds it to that check): Date.parse added
 * only the zone's range (hours < 24, minutes < 60), and Date.UTC reads the years 0–99 as
 * 1900–1999, so Feb 29 of year 0000 (leap) is refused and of 0096 accepted.
 */
export function isIsoInstant(s: string): boolean {
  if (!ISO_INSTANT.test(s)) return false;
  if (twoDigits(s, 11) >= 24 || twoDigits(s, 14) >= 60 || twoDigits(s, 17) >= 60) return false;
  const end = s.length;
  if (s.charCodeAt(end - 1) !== 0x5a && (twoDigits(s, end - 5) >= 24 || twoDigits(s, end - 2) >= 60)) return false;
  const month = twoDigits(s, 5);
  const day = twoDigits(s, 8);
  if (month < 1 || month > 12 || day < 1) return false;
  if (day <= DAYS_IN_MONTH[month - 1]!) return true;
  const written = twoDigits(s, 0) * 100 + twoDigits(s, 2);
  const year = written <= 99 ? 1900 + written : written;
  return month === 2 && day === 29 && year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
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

/**
 * The readers above over one object, for the state-entry parsers: the first problem is kept
 * and reported by `done`; later reads return placeholders. Fields not named are dropped: a
 * parsed record holds only what we know. `…OrNull` means the key is required and may be null.
 * The checks are the readers'; the wording is the state files' own ("has no 'home'", "field
 * 'pid' is not an integer ≥ 0 (got "12")"), which doctor and the reader have always printed
 * for an unreadable state file, so consolidating the kits changed no message.
 */
export class Fields {
  private problem: string | null = null;
  private readonly o: Obj;

  constructor(
    value: unknown,
    private readonly what: string,
  ) {
    if (isObj(value)) this.o = value;
    else {
      this.o = {};
      this.problem = `${what} is not a JSON object`;
    }
  }

  /**
   * A field that is not what was expected: the first problem is kept, worded by whether the key
   * is absent, and the placeholder is handed out. Callers check the value inline and build
   * `expected` only here, on the failure path: a parser runs for every state file and spool
   * line a bridge run reads (docs/performance.md).
   */
  private miss<T>(key: string, expected: string, placeholder: T): T {
    const v = this.o[key];
    this.problem ??=
      v === undefined ? `${this.what} has no '${key}'` : `${this.what} field '${key}' is not ${expected} (got ${JSON.stringify(v)?.slice(0, 60)})`;
    return placeholder;
  }

  /** The value as parsed, for a field kept verbatim (e.g. a spooled entry). */
  raw(key: string): unknown {
    return this.o[key];
  }

  str(key: string, pattern?: RegExp): string {
    const v = this.o[key];
    if (typeof v === 'string' && (pattern === undefined || pattern.test(v))) return v;
    return this.miss(key, pattern ? `a string matching ${String(pattern)}` : 'a string', '');
  }

  strOrNull(key: string, pattern?: RegExp): string | null {
    return this.o[key] === null ? null : this.str(key, pattern);
  }

  num(key: string): number {
    const v = this.o[key];
    return typeof v === 'number' && Number.isFinite(v) ? v : this.miss(key, 'a number', 0);
  }

  numOrNull(key: string): number | null {
    return this.o[key] === null ? null : this.num(key);
  }

  int(key: string, min = 0): number {
    const v = this.o[key];
    return Number.isSafeInteger(v) && (v as number) >= 0 && (v as number) >= min ? (v as number) : this.miss(key, `an integer ≥ ${min}`, min);
  }

  intOrNull(key: string, min = 0): number | null {
    return this.o[key] === null ? null : this.int(key, min);
  }

  bool(key: string): boolean {
    const v = this.o[key];
    return typeof v === 'boolean' ? v : this.miss(key, 'true or false', false);
  }

  oneOf<const T extends string>(key: string, choices: readonly T[]): T {
    const v = this.o[key];
    return typeof v === 'string' && (choices as readonly string[]).includes(v) ? (v as T) : this.miss(key, `one of ${choices.join(', ')}`, choices[0] as T);
  }

  oneOfOrNull<const T extends string>(key: string, choices: readonly T[]): T | null {
    return this.o[key] === null ? null : this.oneOf(key, choices);
  }

  strings(key: string): string[] {
    const v = this.o[key];
    return Array.isArray(v) && v.every((x) => typeof x === 'string') ? [...(v as string[])] : this.miss(key, 'an array of strings', []);
  }

  stringsOrNull(key: string): string[] | null {
    return this.o[key] === null ? null : this.strings(key);
  }

  /** A nested object, read by `each` with its own Fields. */
  obj<T>(key: string, each: (f: Fields) => T): T {
    if (this.o[key] === undefined) this.problem ??= `${this.what} has no '${key}'`;
    return this.nested(new Fields(this.o[key], `${this.what} ${key}`), each);
  }

  /** An array of objects, each read by `each` with its own Fields. */
  list<T>(key: string, each: (f: Fields) => T): T[] {
    const found = this.o[key];
    const v: unknown[] = Array.isArray(found) ? found : this.miss(key, 'an array', []);
    return v.map((item, i) => this.nested(new Fields(item, `${this.what} ${key}[${i}]`), each));
  }

  private nested<T>(f: Fields, each: (f: Fields) => T): T {
    const value = each(f);
    this.problem ??= f.problem;
    return value;
  }

  done<T>(value: T): Result<T> {
    return this.problem === null ? ok(value) : fail(this.problem);
  }
}
