import { paint, type Style } from './paint.js';

/**
 * Colour for a line the CLI already laid out and escaped (the output layer calls this after
 * escapeUnsafeLines, so a Hub's words can never carry an escape sequence in, and the only
 * ones on the terminal are ours). The rules recognise the CLI's own fixed markers — FATAL,
 * STOOD DOWN, ⚠️ and doctor's status column — rather than each command painting its text:
 * the bytes in a pipe then stay exactly what they were, by construction.
 */
interface Rule {
  pattern: RegExp;
  /** Which capture group gets the style (the whole match when 0). */
  group: number;
  style: Style;
}

const RULES: readonly Rule[] = [
  // `oh-hai send: FATAL (exit 2, bad_address) — …`
  { pattern: /^(?:oh-hai[^:]*: )(FATAL)( \(exit \d+)/, group: 1, style: 'red' },
  { pattern: /^(?:oh-hai[^:]*: )(STOOD DOWN|STOPPED)( \(exit \d+)/, group: 1, style: 'yellow' },
  // A warning line, from its sign to the end.
  { pattern: /(\u26a0\ufe0f.*)$/, group: 1, style: 'yellow' },
  // doctor: the status column, then its verdict line.
  { pattern: /^(fail)(\s)/, group: 1, style: 'red' },
  { pattern: /^(warn)(\s)/, group: 1, style: 'yellow' },
  { pattern: /^(pass)(\s)/, group: 1, style: 'green' },
  { pattern: /^(skip)(\s)/, group: 1, style: 'dim' },
  { pattern: /^doctor: (FAIL\b.*)$/, group: 1, style: 'red' },
  { pattern: /^doctor: (pass with warnings\b.*)$/, group: 1, style: 'yellow' },
  { pattern: /^doctor: (pass)$/, group: 1, style: 'green' },
];

/** One line with its markers painted (the first rule that matches wins). */
export function highlightLine(line: string): string {
  for (const r of RULES) {
    const m = r.pattern.exec(line);
    if (!m || m[r.group] === undefined) continue;
    const target = m[r.group]!;
    const at = m.index + m[0].indexOf(target);
    return line.slice(0, at) + paint(true, r.style, target) + line.slice(at + target.length);
  }
  return line;
}
