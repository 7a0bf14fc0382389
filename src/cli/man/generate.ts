import type { Command, Option } from 'commander';
import { bold, italic, roffExample, roffParagraphs, roffTagged, roffText } from './roff.js';
import { jsonSection } from './json-section.js';
import { commandExamples, isHiddenCommand, visibleCommands } from '../help.js';

export interface PageSpec {
  /** e.g. `oh-hai-bridge`; the file is man/<name>.<section>. */
  name: string;
  section: 1 | 5;
  /** The NAME line after the dash. */
  summary: string;
  /** Command paths this page documents, e.g. ['send', 'ask', 'task', 'reply'] or ['session close']. */
  commands: string[];
  /** The program's own options (--version) and an index of every command with the page that documents it. */
  program?: boolean;
  description: string;
  /**
   * Text for options commander holds no description for (hidden ones: retired or refused
   * flags), or to add after one it does. Keyed by `<command path> <--long>`, or by `<--long>`
   * for every command on the page. An option with neither is a generation error.
   */
  optionNotes?: Record<string, string>;
  sections?: { heading: string; text?: string; items?: [string, string][]; example?: string }[];
  environment?: [string, string][];
  files?: [string, string][];
  exitStatus?: [string, string][];
  examples?: { text: string; code: string }[];
  seeAlso: string[];
}

export interface PageFile {
  /** The file name inside man/, e.g. `oh-hai-bridge.1`. */
  file: string;
  text: string;
}

/** Find a command by its path below the program ('session close'). */
export function findCommand(program: Command, path: string): Command | undefined {
  let cur: Command | undefined = program;
  for (const part of path.split(' ')) {
    cur = cur?.commands.find((c) => c.name() === part || c.aliases().includes(part));
    if (!cur) return undefined;
  }
  return cur;
}

/** Every option commander knows for a command (hidden ones included: retired and refused flags are documented as such). */
export function commandOptions(cmd: Command): readonly Option[] {
  return cmd.options.filter((o) => o.long !== '--help');
}

/** A command is documented on its own when it takes options or arguments, or has nothing below it. */
function documentsItself(cmd: Command): boolean {
  return cmd.commands.length === 0 || commandOptions(cmd).length > 0 || cmd.registeredArguments.length > 0;
}

/** Every visible command path the CLI defines that a page must document ('bridge', 'hub agent add', …). */
export function visibleCommandPaths(program: Command): string[] {
  return visibleCommands(program)
    .filter(({ cmd }) => documentsItself(cmd))
    .map(({ path }) => path);
}

/** Expand a path to itself plus every visible subcommand below it. */
function expand(program: Command, path: string): { path: string; cmd: Command }[] {
  const cmd = findCommand(program, path);
  if (!cmd) throw new Error(`man page names command '${path}', which the CLI does not define`);
  const out: { path: string; cmd: Command }[] = [];
  if (documentsItself(cmd)) out.push({ path, cmd });
  for (const sub of cmd.commands) {
    if (isHiddenCommand(sub)) continue;
    out.push(...expand(program, `${path} ${sub.name()}`));
  }
  return out;
}

export function pageCommands(program: Command, spec: PageSpec): { path: string; cmd: Command }[] {
  return spec.commands.flatMap((p) => expand(program, p));
}

function synopsisLine(path: string, cmd: Command): string {
  const args = cmd.registeredArguments.map((a) => {
    const name = `${a.name()}${a.variadic ? '...' : ''}`;
    return a.required ? `<${name}>` : `[${name}]`;
  });
  const opts = commandOptions(cmd).length > 0 ? ' [options]' : '';
  return `${bold(`oh-hai ${path}`)}${roffText(opts)}${args.length ? ' ' + args.map((a) => italic(a)).join(' ') : ''}`;
}

function optionBlock(spec: PageSpec, path: string, o: Option): string {
  const long = o.long ?? o.flags;
  const note = spec.optionNotes?.[`${path} ${long}`] ?? spec.optionNotes?.[long];
  if ((o.hidden || !o.description) && note === undefined) {
    throw new Error(
      `${spec.name}: 'oh-hai ${path} ${long}' has no ${o.hidden ? 'help (it is hidden)' : 'description'}; add optionNotes['${path} ${long}'] to its PageSpec`,
    );
  }
  const parts = [o.hidden ? '' : o.description];
  if (o.defaultValue !== undefined && o.defaultValue !== false && !(Array.isArray(o.defaultValue) && o.defaultValue.length === 0)) {
    parts.push(`Default: ${String(o.defaultValue)}.`);
  }
  if (o.argChoices) parts.push(`One of: ${o.argChoices.join(', ')}.`);
  if (note !== undefined) parts.push(note);
  return roffTagged(bold(o.flags), roffText(parts.filter(Boolean).join(' ')));
}

function commandIndex(program: Command, self: PageSpec, pages: readonly PageSpec[]): string[] {
  const out: string[] = ['.SH COMMANDS'];
  for (const cmd of program.commands) {
    if (isHiddenCommand(cmd)) continue;
    const page = pages.find((p) => p.commands.some((c) => c === cmd.name() || c.startsWith(cmd.name() + ' ')));
    if (!page) throw new Error(`no man page documents 'oh-hai ${cmd.name()}'`);
    const description = cmd.description().replace(/([^.])$/, '$1.');
    const where = page === self ? 'See OPTIONS below.' : `See ${page.name}(${page.section}).`;
    out.push(roffTagged(bold(`oh-hai ${cmd.name()}`), roffText(`${description} ${where}`)));
  }
  return out;
}

export function renderPage(program: Command, spec: PageSpec, opts: { version: string; pages: readonly PageSpec[] }): string {
  const out: string[] = [];
  out.push(`.TH ${spec.name.toUpperCase()} ${spec.section} "" "oh-hai ${opts.version}" "oh-hai manual"`);
  out.push('.SH NAME', `${roffText(spec.name)} \\- ${roffText(spec.summary)}`);
  const cmds = pageCommands(program, spec);
  const synopsis = cmds.map(({ path, cmd }) => synopsisLine(path, cmd));
  if (spec.program) synopsis.unshift(`${bold('oh-hai')} ${italic('command')} [${italic('options')}]`, `${bold('oh-hai')} [${bold('-V')} | ${bold('-h')}]`);
  if (synopsis.length > 0) out.push('.SH SYNOPSIS', synopsis.join('\n.br\n'));
  out.push('.SH DESCRIPTION', roffParagraphs(spec.description));
  if (spec.program) out.push(...commandIndex(program, spec, opts.pages));
  const withOptions = cmds.filter(({ cmd }) => commandOptions(cmd).length > 0 || cmd.description());
  if (withOptions.length > 0 || spec.program) {
    out.push('.SH OPTIONS');
    if (spec.program) {
      if (cmds.length > 0) out.push(`.SS "${roffText('oh-hai')}"`);
      for (const o of program.options) out.push(optionBlock(spec, '', o));
      out.push(roffTagged(bold('-h, --help'), roffText('Print help for oh-hai or for any command (oh-hai <command> --help) and exit 0.')));
    }
    for (const { path, cmd } of withOptions) {
      if (cmds.length > 1 || spec.program) out.push(`.SS "${roffText(`oh-hai ${path}`)}"`);
      if (cmd.description()) out.push(roffParagraphs(cmd.description()));
      for (const o of commandOptions(cmd)) out.push(optionBlock(spec, path, o));
    }
  }
  for (const s of spec.sections ?? []) {
    out.push(`.SH ${roffText(s.heading.toUpperCase())}`);
    if (s.text) out.push(roffParagraphs(s.text));
    for (const [k, v] of s.items ?? []) out.push(roffTagged(bold(k), roffText(v)));
    if (s.example) out.push(roffExample(s.example));
  }
  out.push(...jsonSection(spec.name));
  const tagged = (heading: string, rows: [string, string][] | undefined) => {
    if (!rows || rows.length === 0) return;
    out.push(`.SH ${heading}`);
    for (const [k, v] of rows) out.push(roffTagged(bold(k), roffText(v)));
  };
  tagged('ENVIRONMENT', spec.environment);
  tagged('FILES', spec.files);
  tagged('EXIT STATUS', spec.exitStatus);
  // The page's own walkthroughs, then the examples each command's --help ends with (src/cli/help.ts).
  const shortExamples = cmds.filter(({ path }) => commandExamples(path).length > 0);
  if (shortExamples.length > 0 || (spec.examples && spec.examples.length > 0)) out.push('.SH EXAMPLES');
  for (const e of spec.examples ?? []) out.push('.PP', roffParagraphs(e.text), roffExample(e.code));
  for (const { path } of shortExamples) {
    out.push(`.SS "${roffText(`oh-hai ${path} --help`)}"`);
    out.push(roffExample(commandExamples(path).map((x) => `$ ${x}`).join('\n')));
  }
  out.push(
    '.SH SEE ALSO',
    spec.seeAlso
      .map((s) => {
        const m = /^(.*)\((\d)\)$/.exec(s);
        return m ? `${bold(m[1] ?? s)}(${m[2]})` : roffText(s);
      })
      .join(',\n'),
  );
  return out.join('\n') + '\n';
}

/** Every page, rendered from the program commander builds. The write script and the staleness test both call this. */
export function renderPages(program: Command, pages: readonly PageSpec[], version: string): PageFile[] {
  return pages.map((spec) => ({ file: `${spec.name}.${spec.section}`, text: renderPage(program, spec, { version, pages }) }));
}

/**
 * The option flags a rendered page documents in its OPTIONS section, per subsection
 * (`oh-hai bridge`, …; a single-command page's options are under its only command).
 */
export function documentedOptions(pageText: string): Map<string, string[]> {
  const lines = pageText.split('\n');
  const out = new Map<string, string[]>();
  let inOptions = false;
  let current = '';
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? '';
    if (line.startsWith('.SH ')) {
      inOptions = line === '.SH OPTIONS';
      current = '';
      continue;
    }
    if (!inOptions) continue;
    const ss = /^\.SS "(.*)"$/.exec(line);
    if (ss) {
      current = unroff(ss[1] ?? '').replace(/^oh-hai ?/, '');
      continue;
    }
    if (line === '.TP') {
      const tag = unroff(lines[i + 1] ?? '');
      const flags = tag.split(/[ ,]+/).filter((w) => /^--?[A-Za-z]/.test(w));
      out.set(current, [...(out.get(current) ?? []), ...flags]);
    }
  }
  return out;
}

/** Undo the escapes this generator writes, for reading a page back. */
export function unroff(s: string): string {
  return s
    .replace(/\\f[BIR]/g, '')
    .replace(/\\-/g, '-')
    .replace(/\\e/g, '\\')
    .replace(/\\&/g, '')
    .replace(/\\\[u([0-9A-F]{4,6})\]/g, (_m, hex: string) => String.fromCodePoint(parseInt(hex, 16)));
}
