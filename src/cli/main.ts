import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Command } from 'commander';
import { commandGroups } from './commands/index.js';
import type { CliIO, Outputs } from './io.js';
import { buildProgramOf, runCliOf, runProcess } from './program.js';

export { VERSION } from './version.js';

/** The whole CLI: every command group (bridge-main.ts is the bridge's own entry). */
export const buildProgram = (io: CliIO, onFinish: Parameters<typeof buildProgramOf>[2], argv?: readonly string[]): Promise<Command> =>
  buildProgramOf(commandGroups, io, onFinish, argv);

/** Run the CLI in-process and return the exit code; everything printed goes to io. */
export const runCli = (argv: string[], io: CliIO): Promise<number> => runCliOf(commandGroups, argv, io);

/**
 * The process entry (bin/oh-hai, and `node dist/cli/main.js`). `descriptors` when the bridge's
 * own entry handed the run over (bridge-main.ts): `oh-hai bridge` writes with write(2) whichever
 * bundle runs it.
 */
export const main = (outputs: Outputs = 'streams'): Promise<void> => runProcess(commandGroups, outputs);

/** `node dist/cli/main.js …` runs the CLI too: that is how io.self starts a child (the consumer, the double fork). */
function invokedDirectly(): boolean {
  const script = process.argv[1];
  if (script === undefined) return false;
  try {
    return realpathSync(script) === fileURLToPath(import.meta.url);
  } catch {
    return false;
  }
}

if (invokedDirectly()) void main();
