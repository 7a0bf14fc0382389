import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { Command, Option } from 'commander';
import { describe, expect, it } from 'vitest';
import { commandExamples, isHiddenCommand, visibleCommands } from '../../../src/cli/help.js';
import { processIO } from '../../../src/cli/io.js';
import { buildProgram } from '../../../src/cli/main.js';
import { unroff, visibleCommandPaths } from '../../../src/cli/man/generate.js';
import { runOhHai } from '../../helpers/cli.js';
import { tempEnv } from '../../helpers/env.js';
import { repoRoot } from '../../helpers/cli.js';

/**
 * Issue 17: "examples in each command's help". Every visible command — subcommands and
 * command groups included — ends its --help with examples, each a real invocation of that
 * command (parsed here against the command tree: the path exists, every flag is one the
 * command takes, a flag's value is given, the arguments are there), and the man page of each
 * command shows them.
 */
const program = await buildProgram(processIO(), () => undefined);
const commands = visibleCommands(program);

/** The help a command prints, the text added after it included (commander emits that on outputHelp). */
function helpOf(cmd: Command): string {
  let out = '';
  cmd.configureOutput({ writeOut: (s) => (out += s), writeErr: (s) => (out += s) });
  cmd.outputHelp();
  return out;
}

/** Shell words of the oh-hai part of an example line: quotes joined, cut at a pipe or redirection after it. */
function ohHaiWords(line: string): string[] {
  const words = [...line.matchAll(/"([^"]*)"|'([^']*)'|(\S+)/g)].map((m) => m[1] ?? m[2] ?? m[3]!);
  const start = words.indexOf('oh-hai');
  const rest = words.slice(start + 1);
  const end = rest.findIndex((w) => ['|', '<', '>', '>>', '&', '&&', ';'].includes(w));
  return end === -1 ? rest : rest.slice(0, end);
}

/** Why `words` is not a valid invocation of the command tree, or null when it is. Returns the command it reaches. */
function parse(words: string[]): { cmd: Command | null; problem: string | null } {
  let cmd: Command = program;
  let i = 0;
  for (; i < words.length; i++) {
    const sub = cmd.commands.find((c) => c.name() === words[i]);
    if (sub === undefined) break;
    cmd = sub;
  }
  if (cmd.commands.some((c) => !isHiddenCommand(c))) return { cmd, problem: `'${words.slice(0, i).join(' ')}' is a group, not a command that runs` };
  const options: readonly Option[] = cmd.options;
  let operands = 0;
  for (; i < words.length; i++) {
    const w = words[i]!;
    if (!w.startsWith('-')) {
      operands++;
      continue;
    }
    const o = options.find((x) => x.long === w || x.short === w);
    if (o === undefined) return { cmd, problem: `${w} is not an option of oh-hai ${cmd.name()}` };
    if (o.hidden) return { cmd, problem: `${w} is hidden (retired or refused)` };
    if (o.required) {
      if (i + 1 >= words.length || words[i + 1]!.startsWith('--')) return { cmd, problem: `${w} needs a value` };
      i++;
    }
  }
  const args = cmd.registeredArguments;
  const required = args.filter((a) => a.required).length;
  const variadic = args.some((a) => a.variadic);
  if (operands < required) return { cmd, problem: `${required} argument(s) needed, ${operands} given` };
  if (!variadic && operands > args.length) return { cmd, problem: `${operands} argument(s) given, it takes ${args.length}` };
  return { cmd, problem: null };
}

describe("examples in each command's help", () => {
  it('the walk reaches the subcommands (not only the top level)', () => {
    const paths = commands.map((c) => c.path);
    expect(paths).toEqual(expect.arrayContaining(['inbox watch', 'messages show', 'session close', 'fleet ls', 'hub agent add', 'hub session close']));
    expect(paths).not.toContain('bridge status');
  });

  it.each(commands.map((c) => [c.path, c.cmd] as const))('oh-hai %s --help ends with examples of itself', (p, cmd) => {
    const help = helpOf(cmd);
    const block = /\nExamples:\n((?: {2}\$ .*\n)+)\n*$/.exec(help);
    expect(block, `oh-hai ${p} --help has no Examples section at its end:\n${help}`).not.toBeNull();
    const lines = block![1]!.trimEnd().split('\n');
    expect(lines.map((l) => l.replace(/^ {2}\$ /, ''))).toEqual([...commandExamples(p)]);
    for (const line of commandExamples(p)) expect(ohHaiWords(line).slice(0, p.split(' ').length).join(' '), line).toBe(p);
  });

  it.each(commands.flatMap((c) => commandExamples(c.path).map((x) => [x] as const)))('%s is a real invocation', (line) => {
    const { problem } = parse(ohHaiWords(line));
    expect(problem, line).toBeNull();
  });

  it("each command's man page shows its examples", () => {
    const manDir = path.join(repoRoot, 'man');
    const pages = readdirSync(manDir)
      .map((f) => unroff(readFileSync(path.join(manDir, f), 'utf8')))
      .join('\n');
    for (const p of visibleCommandPaths(program)) {
      expect(commandExamples(p).length, `oh-hai ${p} has no examples`).toBeGreaterThan(0);
      for (const line of commandExamples(p)) expect(pages, `the man pages do not show: $ ${line}`).toContain(`$ ${line}`);
    }
  });

  it('the help the binary prints shows them too (a subcommand two levels down)', async () => {
    const t = tempEnv();
    const r = await runOhHai(['hub', 'agent', 'add', '--help'], { env: t.env });
    t.cleanup();
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/\nExamples:\n {2}\$ oh-hai hub agent add reviewer\n/);
  });
});
