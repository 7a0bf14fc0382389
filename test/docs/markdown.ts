/** Fenced code blocks of a Markdown document, with the words after the language as tags. */
export interface FencedBlock {
  lang: string;
  tags: string[];
  code: string;
  /** 1-based line of the opening fence. */
  line: number;
}

export function fencedBlocks(md: string): FencedBlock[] {
  const lines = md.split('\n');
  const out: FencedBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\S*)\s*(.*)$/.exec(lines[i] ?? '');
    if (!open) continue;
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && lines[i] !== '```'; i++) body.push(lines[i] ?? '');
    if (i >= lines.length) throw new Error(`unclosed code fence opened at line ${start + 1}`);
    out.push({ lang: open[1] ?? '', tags: (open[2] ?? '').split(/\s+/).filter(Boolean), code: body.join('\n') + '\n', line: start + 1 });
  }
  return out;
}

/** The commands of a shell block: one per line, comments and blank lines dropped. */
export function shellCommands(code: string): string[] {
  return code
    .split('\n')
    .map((l) =>
      l
        .replace(/\s+#\s.*$/, '')
        .replace(/^#.*$/, '')
        .trim(),
    )
    .filter((l) => l !== '');
}
