/**
 * One line wrapped to `width` columns at spaces; continuations keep the line's own indent plus
 * two, so they read as belonging to the line above. A word longer than the line (a URL, a
 * path, an address) is never broken: copied from the terminal it must still be whole. Widths
 * are counted in UTF-16 units, which matches the terminal for the CLI's text (ASCII, `—`, and
 * ⚠️ — two units, two columns).
 */
export function wrapLine(line: string, width: number): string {
  if (line.length <= width || width < 20) return line;
  const indent = /^ */.exec(line)![0];
  const hang = indent + '  ';
  const words = line.slice(indent.length).split(' ');
  const out: string[] = [];
  let current = indent + words[0];
  for (const word of words.slice(1)) {
    if (current.length + 1 + word.length <= width || current.trim() === '') current += ' ' + word;
    else {
      out.push(current.trimEnd());
      current = hang + word;
    }
  }
  out.push(current);
  return out.join('\n');
}

/** Every line of `text` wrapped (tabs mark a table laid out elsewhere: such lines are left alone). */
export function wrapText(text: string, width: number): string {
  return text
    .split('\n')
    .map((l) => (l.includes('\t') ? l : wrapLine(l, width)))
    .join('\n');
}
