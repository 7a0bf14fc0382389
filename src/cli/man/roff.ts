/**
 * Escape text for roff: backslashes, hyphens (so flags copy-paste as ASCII), a leading
 * control character, and every non-ASCII character as a \[uXXXX] escape — groff reads
 * input as Latin-1 unless the caller runs preconv, so raw UTF-8 would render as mojibake.
 */
export function roffText(s: string): string {
  let out = '';
  for (const ch of s) {
    const cp = ch.codePointAt(0) ?? 0;
    if (ch === '\\') out += '\\e';
    else if (ch === '-') out += '\\-';
    else if (cp > 0x7e) out += `\\[u${cp.toString(16).toUpperCase().padStart(4, '0')}]`;
    else out += ch;
  }
  return out.replace(/^([.'])/gm, '\\&$1');
}

/** A paragraph of prose; blank lines in the source start new paragraphs. */
export function roffParagraphs(text: string): string {
  return text
    .trim()
    .split(/\n\s*\n/)
    .map((p) => roffText(p.replace(/\s*\n\s*/g, ' ')))
    .join('\n.PP\n');
}

/** A verbatim block (commands, unit files): no filling, no adjusting. */
export function roffExample(text: string): string {
  const body = text
    .replace(/\n$/, '')
    .split('\n')
    .map((l) => (l === '' ? '' : roffText(l)))
    .join('\n');
  return `.PP\n.RS 4\n.nf\n${body}\n.fi\n.RE`;
}

export function roffTagged(tag: string, body: string): string {
  return `.TP\n${tag}\n${body}`;
}

export const bold = (s: string): string => `\\fB${roffText(s)}\\fR`;
export const italic = (s: string): string => `\\fI${roffText(s)}\\fR`;
