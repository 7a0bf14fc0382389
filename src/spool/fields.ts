import { fail, ok, type Result } from '../core/index.js';

/**
 * Reads typed fields off parsed JSON for the state-entry parsers. The first problem is
 * kept and reported by `done`; later reads return placeholders, so a parser is a plain
 * list of fields. Fields not named are dropped: a parsed record holds only what we know.
 */
export class Fields {
  private problem: string | null = null;
  private readonly o: Record<string, unknown>;

  constructor(
    value: unknown,
    private readonly what: string,
  ) {
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) this.o = value as Record<string, unknown>;
    else {
      this.o = {};
      this.problem = `${what} is not a JSON object`;
    }
  }

  private bad<T>(key: string, expected: string, placeholder: T): T {
    if (this.problem === null) {
      const v = this.o[key];
      this.problem =
        v === undefined ? `${this.what} has no '${key}'` : `${this.what} field '${key}' is not ${expected} (got ${JSON.stringify(v)?.slice(0, 60)})`;
    }
    return placeholder;
  }

  /** The value as parsed, for a field kept verbatim (e.g. a spooled entry). */
  raw(key: string): unknown {
    return this.o[key];
  }

  str(key: string, pattern?: RegExp): string {
    const v = this.o[key];
    if (typeof v === 'string' && (pattern === undefined || pattern.test(v))) return v;
    return this.bad(key, pattern ? `a string matching ${String(pattern)}` : 'a string', '');
  }

  strOrNull(key: string, pattern?: RegExp): string | null {
    return this.o[key] === null ? null : this.str(key, pattern);
  }

  num(key: string): number {
    const v = this.o[key];
    if (typeof v === 'number' && Number.isFinite(v)) return v;
    return this.bad(key, 'a number', 0);
  }

  numOrNull(key: string): number | null {
    return this.o[key] === null ? null : this.num(key);
  }

  int(key: string, min = 0): number {
    const v = this.o[key];
    if (typeof v === 'number' && Number.isSafeInteger(v) && v >= min) return v;
    return this.bad(key, `an integer ≥ ${min}`, min);
  }

  intOrNull(key: string, min = 0): number | null {
    return this.o[key] === null ? null : this.int(key, min);
  }

  bool(key: string): boolean {
    const v = this.o[key];
    if (typeof v === 'boolean') return v;
    return this.bad(key, 'true or false', false);
  }

  oneOf<const T extends string>(key: string, choices: readonly T[]): T {
    const v = this.o[key];
    if (typeof v === 'string' && (choices as readonly string[]).includes(v)) return v as T;
    return this.bad(key, `one of ${choices.join(', ')}`, choices[0] as T);
  }

  oneOfOrNull<const T extends string>(key: string, choices: readonly T[]): T | null {
    return this.o[key] === null ? null : this.oneOf(key, choices);
  }

  strings(key: string): string[] {
    const v = this.o[key];
    if (Array.isArray(v) && v.every((s) => typeof s === 'string')) return [...(v as string[])];
    return this.bad(key, 'an array of strings', []);
  }

  stringsOrNull(key: string): string[] | null {
    return this.o[key] === null ? null : this.strings(key);
  }

  /** A nested object, read by `each` with its own Fields. */
  obj<T>(key: string, each: (f: Fields) => T): T {
    const f = new Fields(this.o[key], `${this.what} ${key}`);
    const value = each(f);
    if (f.problem !== null && this.problem === null) this.problem = f.problem;
    return value;
  }

  /** An array of objects, each read by `each` with its own Fields. */
  list<T>(key: string, each: (f: Fields) => T): T[] {
    const v = this.o[key];
    if (!Array.isArray(v)) return this.bad(key, 'an array', []);
    return v.map((item, i) => {
      const f = new Fields(item, `${this.what} ${key}[${i}]`);
      const value = each(f);
      if (f.problem !== null && this.problem === null) this.problem = f.problem;
      return value;
    });
  }

  done<T>(value: T): Result<T> {
    return this.problem === null ? ok(value) : fail(this.problem);
  }
}
