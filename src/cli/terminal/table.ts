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
  return alignRows(rows, facts.columns).flat().join('\n') + '\n';
}

/**
 * The terminal layout of a table, as the lines of each row (a row wraps onto several when
 * it is wider than `columns`): for a command that puts lines of its own between rows and
 * still wants every row in the same columns (doctor's self-test heading). A line break in a
 * cell starts a new line inside its column.
 */
export function alignRows(rows: readonly (readonly string[])[], columns: number | null): string[][] {
  if (rows.length === 0) return [];
  const count = Math.max(...rows.map((r) => r.length));
  const column = (i: number, measure: (line: string) => number[]) => Math.max(...rows.flatMap((r) => (r[i] ?? '').split('\n').flatMap(measure)));
  const natural = Array.from({ length: count }, (_, i) => column(i, (l) => [l.length]));
  const least = Array.from({ length: count }, (_, i) => column(i, (l) => l.split(' ').map((w) => w.length)));
  const widths = fitWidths(natural, least, columns === null ? Infinity : columns - GAP.length * (count - 1));
  return rows.map((row) => {
    const cells = widths.map((w, i) => (row[i] ?? '').split('\n').flatMap((l) => wrapCell(l, w)));
    const height = Math.max(...cells.map((c) => c.length));
    const lines: string[] = [];
    for (let line = 0; line < height; line++) {
      const parts = cells.map((c, i) => (i === count - 1 ? (c[line] ?? '') : (c[line] ?? '').padEnd(widths[i]!)));
      lines.push(parts.join(GAP).trimEnd());
    }
    return lines;
  });
}

/**
 * Column widths within `room`. Every column gets at least its longest word (an id or an
 * address is never broken, so a terminal too narrow for those gets long lines rather than
 * cut ids); what is left goes, evenly, to the columns that want more, so the widest cells
 * wrap first.
 */
function fitWidths(natural: readonly number[], least: readonly number[], room: number): number[] {
  if (natural.reduce((a, b) => a + b, 0) <= room) return [...natural];
  const widths = [...least];
  let left = room - widths.reduce((a, b) => a + b, 0);
  let open = widths.map((_, i) => i).filter((i) => natural[i]! > widths[i]!);
  while (left > 0 && open.length > 0) {
    const share = Math.max(1, Math.floor(left / open.length));
    for (const i of open) {
      const add = Math.min(share, natural[i]! - widths[i]!, left);
      widths[i]! += add;
      left -= add;
    }
    open = open.filter((i) => natural[i]! > widths[i]!);
  }
  return widths;
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
