import { type Coded, done, usageFailure } from '../core/index.js';
import { type TomlDoc, parseToml } from './toml-file.js';

/**
 * A TOML string for `s`: a basic string ("…") unless it holds `"` or `\`, then a literal
 * string ('…'). Callers never pass both quote kinds (the policy writer drops such ids).
 */
export function tomlString(s: string): string {
  if (!s.includes('"') && !s.includes('\\')) return `"${s}"`;
  if (!s.includes("'")) return `'${s}'`;
  return `"${s.replace(/\\/gu, '\\\\').replace(/"/gu, '\\"')}"`;
}

/** A comment's text with control characters (a newline would end the comment) made spaces. */
export const commentText = (s: string): string => s.replace(/[\u0000-\u0008\u000a-\u001f\u007f]/gu, ' ');

const escapeRegExp = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/gu, '\\$&');

const canonical = (v: unknown): unknown => {
  if (v instanceof Date) return v.toISOString();
  if (Array.isArray(v)) return v.map(canonical);
  if (v !== null && typeof v === 'object')
    return Object.fromEntries(
      Object.keys(v)
        .sort()
        .map((k) => [k, canonical((v as Record<string, unknown>)[k])]),
    );
  return v;
};

const sameValue = (a: unknown, b: unknown): boolean => JSON.stringify(canonical(a)) === JSON.stringify(canonical(b));

/**
 * The text with `key = <value>` added to `[table]`, by inserting lines rather than
 * re-stringifying the document, so the user's comments, order and formatting survive.
 * Where the table has a `[table]` header the lines go right under it; where the table does not
 * exist a new one is appended; where it exists only as dotted keys the key is written dotted
 * before the first table header. The result must parse to exactly the old document plus this
 * key with this value — anything else (a header inside a multi-line string, an inline table)
 * is refused, and nothing is written.
 */
export function insertTableKey(
  { text, doc, file }: { text: string; doc: TomlDoc; file: string },
  table: string,
  key: string,
  value: unknown,
  valueText: string,
  comments: string[] = [],
): Coded<string> {
  const eol = text.includes('\r\n') ? '\r\n' : '\n';
  valueText = valueText.replace(/\r?\n/gu, eol);
  const commentLines = comments.map((c) => `# ${commentText(c)}`);
  const header = new RegExp(`^[ \\t]*\\[[ \\t]*${escapeRegExp(table)}[ \\t]*\\][ \\t]*(#.*)?$`, 'mu').exec(text);
  let next: string;
  if (header) {
    const at = header.index + header[0].length;
    next = text.slice(0, at) + eol + [...commentLines, `${key} = ${valueText}`].join(eol) + text.slice(at);
  } else if (!(table in doc)) {
    const base = text === '' || text.endsWith('\n') ? text : text + eol;
    next = base + (base === '' ? '' : eol) + [`[${table}]`, ...commentLines, `${key} = ${valueText}`].join(eol) + eol;
  } else {
    const firstHeader = /^[ \t]*\[/mu.exec(text);
    const at = firstHeader ? firstHeader.index : text.length;
    const before = text.slice(0, at);
    const lead = before === '' || before.endsWith('\n') ? before : before + eol;
    next = lead + [...commentLines, `${table}.${key} = ${valueText}`].join(eol) + eol + (firstHeader ? eol : '') + text.slice(at);
  }

  const manual = `add \`${key} = ${valueText.replace(/\s*\n\s*/gu, ' ')}\` under [${table}] in ${file} by hand`;
  const reparsed = parseToml(next, file);
  if (!reparsed.ok)
    return usageFailure(
      'config_edit_refused',
      `could not add ${table}.${key} to ${file} without disturbing it (${reparsed.error.message}); nothing was written — ${manual}`,
    );
  const got = reparsed.value[table];
  const gotTable = got !== null && typeof got === 'object' && !Array.isArray(got) ? (got as TomlDoc) : null;
  if (gotTable === null || !sameValue(gotTable[key], value))
    return usageFailure(
      'config_edit_refused',
      `could not add ${table}.${key} to ${file}: the edited file did not read back as written; nothing was written — ${manual}`,
    );
  const rest: TomlDoc = { ...reparsed.value, [table]: Object.fromEntries(Object.entries(gotTable).filter(([k]) => k !== key)) };
  if (!(table in doc) && Object.keys(rest[table] as TomlDoc).length === 0) delete rest[table];
  if (!sameValue(rest, doc))
    return usageFailure(
      'config_edit_refused',
      `could not add ${table}.${key} to ${file}: the edit would have changed other settings; nothing was written — ${manual}`,
    );
  return done(next);
}
