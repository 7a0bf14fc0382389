import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { commandGroups } from '../../../src/cli/commands/index.js';
import { processIO } from '../../../src/cli/io.js';
import { buildProgram } from '../../../src/cli/main.js';

const topLevel = (program: Command): string[] => program.commands.map((c) => c.name());
const host = { io: processIO(), finish: () => undefined, forward: async () => 0 };

describe('command groups (main.ts registers only the group a run names)', () => {
  it('name exactly the top-level commands each registration declares', async () => {
    for (const group of commandGroups) {
      const program = new Command('oh-hai');
      (await group.load())(program, host);
      expect(topLevel(program), `group ${group.commands.join(', ')}`).toEqual([...group.commands]);
    }
  });

  it('never name a command twice', () => {
    const names = commandGroups.flatMap((g) => g.commands);
    expect(new Set(names).size).toBe(names.length);
  });

  it('a full program (man pages, --help) has every group (in the order the help lists them, src/cli/help.ts)', async () => {
    const program = await buildProgram(processIO(), () => undefined);
    expect(topLevel(program).sort()).toEqual(commandGroups.flatMap((g) => g.commands).sort());
  });

  it('a run that names a command registers only its group', async () => {
    expect(topLevel(await buildProgram(processIO(), () => undefined, ['bridge', '--wait', '0']))).toEqual(['bridge']);
    expect(topLevel(await buildProgram(processIO(), () => undefined, ['--help', 'ask', 'x']))).toEqual(['send', 'ask', 'task', 'reply']);
  });

  it('a run that names no known command registers every group, so help and suggestions see them all', async () => {
    const all = commandGroups.flatMap((g) => g.commands);
    for (const argv of [[], ['--help'], ['-V'], ['help', 'bridge'], ['brige']]) {
      expect(topLevel(await buildProgram(processIO(), () => undefined, argv)).sort(), argv.join(' ')).toEqual([...all].sort());
    }
  });
});
