import type { TerminalFacts } from './detect.js';

/** The gap between two columns on a terminal. */
const GAP = '  ';

/**
 * A table as gh prints one: in a pipe, one line per row with tab-separated cells, exactly what
 * a script cuts with `cut -f`; on a terminal, columns aligned and — when the row is wider than
 * the terminal — the widest cells wrapped inside their column, never cut. The first row is the
 * header. Cells must not contain tabs or line breaks.
 */
export function formatTable(rows: readonly (readonly string[])[], facts: TerminalFacts): string {
  if (rows.length === 0) return '';
  if (!facts.tty) return rows.map((r) => r.join('\t')).join('\n') + '\n';
  const count = Math.max(...rows.map((r) => r.length));
  const natural = Array.from({ length: count }, (_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  const widths = fitWidths(natural, facts.columns === null ? Infinity : facts.columns - GAP.length * (count - 1));
  const out: string[] = [];
  for (const row of rows) {
    const cells = widths.map((w, i) => wrapCell(row[i] ?? '', w));
    const height = Math.max(...cells.map((c) => c.length));
    for (let line = 0; line < height; line++) {
      const parts = cells.map((c, i) => (i === count - 1 ? (c[line] ?? '') : (c[line] ?? '').padEnd(widths[i]!)));
      out.push(parts.join(GAP).trimEnd());
    }
  }
  return out.join('\n') + '\n';
}

/**
 * Column widths within `room`: a column narrower than its fair share keeps its natural width,
 * and what is left is shared evenly among the wider ones (at least 10 columns each: a very
 * narrow terminal gets long lines rather than one word per line).
 */
function fitWidths(natural: readonly number[], room: number): number[] {
  if (natural.reduce((a, b) => a + b, 0) <= room) return [...natural];
  const widths = [...natural];
  let open = natural.map((_, i) => i);
  let left = room;
  for (;;) {
    const share = Math.floor(left / open.length);
    const fitting = open.filter((i) => natural[i]! <= share);
    if (fitting.length === 0) {
      for (const i of open) widths[i] = Math.max(10, share);
      return widths;
    }
    for (const i of fitting) left -= natural[i]!;
    open = open.filter((i) => natural[i]! > share);
    if (open.length === 0) return widths;
  }
}

/** A cell's text in lines of at most `width` (a longer word stays whole on its own line). */
function wrapCell(text: string, width: number): string[] {
  if (text.length <= width) return [text];
  const lines: string[] = [];
  let current = '';
  for (const word of text.split(' ')) {
    if (current === '') current = word;
    else if (current.length + 1 + word.length <= width) current += ' ' + word;
    else {
      lines.push(current);
      current = word;
    }
  }
  lines.push(current);
  return lines;
}
