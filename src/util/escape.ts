/**
 * The one escaping function for every text that reaches a terminal or a log: stdout's
 * summaries, `--raw` lines, stderr, bridge.log. Whatever a Hub or a sender supplied, no
 * byte of it can move the cursor, clear the screen, set the title, write the clipboard
 * (OSC 52), or make text display as something it is not.
 *
 * Unsafe: C0 controls, DEL, C1 controls (U+009B is a one-character CSI on many terminals),
 * the Unicode line/paragraph separators, the bidi overrides and isolates, LRM/RLM/ALM and
 * the BOM.
 */
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c\ufeff]/g;
/** The same characters, for a test: nearly every text is clean, and a test costs a fraction of a replace with a function. */
const ANY_UNSAFE = new RegExp(UNSAFE.source);
/** The same without the line break and the tab, which escapeUnsafeLines keeps. */
const ANY_UNSAFE_IN_LINES = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c\ufeff]/;

/** What JSON.stringify would escape in a string ('"', '\\', C0, lone surrogates: any surrogate, to be sure) or escapeUnsafe would. */
const NOT_VERBATIM_IN_JSON = new RegExp(`["\\\\\\ud800-\\udfff${UNSAFE.source.slice(1, -1)}]`);

const SHORT: Readonly<Record<string, string>> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

const escapeChar = (c: string): string => SHORT[c] ?? '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0');

/**
 * Every unsafe character as `\n`, `\r`, `\t` or `\uXXXX`: the result is one line of plain
 * text. Inside a JSON text (a spool line) it is the same JSON value, since JSON reads
 * `\uXXXX` inside a string and these characters can appear nowhere else.
 */
export function escapeUnsafe(text: string): string {
  return ANY_UNSAFE.test(text) ? text.replace(UNSAFE, escapeChar) : text;
}

/**
 * The same, keeping the text's own line breaks and tabs (tables): for a process's stdout
 * and stderr, whose writes are whole lines this program laid out.
 */
export function escapeUnsafeLines(text: string): string {
  // stdout's lines are mostly summaries already escaped where they were built: one test, no split.
  if (!ANY_UNSAFE_IN_LINES.test(text)) return text;
  return text
    .split('\n')
    .map((line) => line.split('\t').map(escapeUnsafe).join('\t'))
    .join('\n');
}

/**
 * A string as one quoted line: JSON escaping, plus \uXXXX for every other unsafe character —
 * escapeUnsafe(JSON.stringify(s)), without either pass for the usual text that needs neither
 * (every printed entry's text goes through here).
 */
export function quoteJson(s: string): string {
  return NOT_VERBATIM_IN_JSON.test(s) ? escapeUnsafe(JSON.stringify(s)) : `"${s}"`;
}
