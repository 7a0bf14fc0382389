import { type ExitRow } from '../../core/index.js';

const cell = (s: string): string => s.replace(/\|/g, '\\|');

/** The bridge's exit table as the README shows it: a Markdown table, one row per code. */
export function exitTableMarkdown(rows: readonly ExitRow[]): string {
  const lines = ['| exit | meaning | what to do |', '|---|---|---|'];
  for (const r of rows) lines.push(`| ${cell(String(r.code))} | ${cell(r.meaning)} | ${cell(r.todo)} |`);
  return lines.join('\n') + '\n';
}

/**
 * Replace what sits between `<!-- <name>:begin -->` and `<!-- <name>:end -->`; the markers
 * stay. A document without both markers is an error, not a silent no-op.
 */
export function replaceGenerated(doc: string, name: string, body: string): string {
  const begin = `<!-- ${name}:begin -->\n`;
  const end = `<!-- ${name}:end -->`;
  const from = doc.indexOf(begin);
  const to = doc.indexOf(end, from);
  if (from < 0 || to < 0) throw new Error(`the document has no ${begin.trim()} … ${end} block`);
  return doc.slice(0, from + begin.length) + body + doc.slice(to);
}
