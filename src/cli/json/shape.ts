/**
 * A small schema language for what `--json` prints: enough to document every field in the
 * man pages and to check real output against the same text (test/integration/cli/json-shape.test.ts).
 * One source, so the page and the check cannot drift apart.
 */

export type Shape =
  | { t: 'string' | 'integer' | 'number' | 'boolean' }
  | { t: 'enum'; values: readonly string[] }
  | { t: 'nullable'; of: Shape }
  | { t: 'array'; of: Shape }
  | { t: 'object'; fields: readonly Field[]; name?: string }
  /** A map with free keys (doctor's `measured`): only the value kinds are checked. */
  | { t: 'record' };

export interface Field {
  name: string;
  shape: Shape;
  /** Absent in some documents (never null-for-absent: null means "known to be nothing"). */
  optional?: boolean;
  doc: string;
}

export const str: Shape = { t: 'string' };
export const int: Shape = { t: 'integer' };
export const num: Shape = { t: 'number' };
export const bool: Shape = { t: 'boolean' };
export const record: Shape = { t: 'record' };
export const oneOf = (...values: string[]): Shape => ({ t: 'enum', values });
export const nullable = (of: Shape): Shape => ({ t: 'nullable', of });
export const arrayOf = (of: Shape): Shape => ({ t: 'array', of });
export const object = (name: string, fields: readonly Field[]): Shape => ({ t: 'object', name, fields });
export const f = (name: string, shape: Shape, doc: string, optional = false): Field => ({ name, shape, doc, ...(optional ? { optional } : {}) });

/** `string`, `integer|null`, `"a"|"b"`, `Message`, `[Message]`: how the man page names a shape. */
export function shapeName(s: Shape): string {
  switch (s.t) {
    case 'enum':
      return s.values.map((v) => JSON.stringify(v)).join('|');
    case 'nullable':
      return `${shapeName(s.of)}|null`;
    case 'array':
      return `[${shapeName(s.of)}]`;
    case 'object':
      return s.name ?? 'object';
    case 'record':
      return 'object';
    default:
      return s.t;
  }
}

/** Every problem with `v` against `s`, each naming the JSON path; empty when it conforms. */
export function checkShape(v: unknown, s: Shape, at = '$'): string[] {
  const bad = (want: string): string[] => [`${at}: expected ${want}, got ${JSON.stringify(v)?.slice(0, 80)}`];
  switch (s.t) {
    case 'string':
      return typeof v === 'string' ? [] : bad('a string');
    case 'integer':
      return Number.isInteger(v) ? [] : bad('an integer');
    case 'number':
      return typeof v === 'number' && Number.isFinite(v) ? [] : bad('a number');
    case 'boolean':
      return typeof v === 'boolean' ? [] : bad('a boolean');
    case 'enum':
      return typeof v === 'string' && s.values.includes(v) ? [] : bad(shapeName(s));
    case 'nullable':
      return v === null ? [] : checkShape(v, s.of, at);
    case 'array':
      return Array.isArray(v) ? v.flatMap((item, i) => checkShape(item, s.of, `${at}[${i}]`)) : bad('an array');
    case 'record':
      return typeof v === 'object' && v !== null && !Array.isArray(v) ? [] : bad('an object');
    case 'object': {
      if (typeof v !== 'object' || v === null || Array.isArray(v)) return bad(`an object (${s.name ?? 'object'})`);
      const o = v as Record<string, unknown>;
      const known = new Set(s.fields.map((x) => x.name));
      const extra = Object.keys(o)
        .filter((k) => !known.has(k))
        .map((k) => `${at}.${k}: not a documented field of ${s.name ?? 'this object'}`);
      const fields = s.fields.flatMap((x) => {
        if (!(x.name in o)) return x.optional ? [] : [`${at}.${x.name}: missing (documented as always present)`];
        return checkShape(o[x.name], x.shape, `${at}.${x.name}`);
      });
      return [...extra, ...fields];
    }
  }
}

/** The documented fields of a shape, flattened to `path (type): doc` rows for a man page; nested objects by dotted path. */
export function fieldRows(s: Shape, prefix = ''): [string, string][] {
  const inner = s.t === 'nullable' || s.t === 'array' ? s.of : s;
  if (inner.t === 'nullable' || inner.t === 'array') return fieldRows(inner, prefix);
  if (inner.t !== 'object') return [];
  return inner.fields.flatMap((x): [string, string][] => {
    const path = prefix === '' ? x.name : `${prefix}.${x.name}`;
    const row: [string, string] = [`${path} (${shapeName(x.shape)}${x.optional ? ', optional' : ''})`, x.doc];
    const held = x.shape.t === 'nullable' || x.shape.t === 'array' ? x.shape.of : x.shape;
    const nested =
      held.t === 'object' && held.name !== undefined && SHARED_NAMES.has(held.name) ? [] : fieldRows(x.shape, x.shape.t === 'array' ? `${path}[]` : path);
    return [row, ...nested];
  });
}

/** Shapes documented once under their own name (Message) instead of under every field that holds one. */
export const SHARED_NAMES = new Set<string>(['Message', 'Session']);
