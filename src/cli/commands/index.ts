import type { Command } from 'commander';
import type { CommandHost } from '../host.js';
import type { CliIO } from '../io.js';
import type { Outcome } from '../../core/index.js';

/**
 * Every command group registers itself here. A registration only declares flags;
 * its run function is imported lazily inside the action, so `oh-hai bridge` does not
 * load the Hub server, the network stack or other commands' code.
 */
export type Registration = (program: Command, host: CommandHost) => void;

/**
 * A command group: the top-level commands its registration declares, and how to load it.
 * Loading is lazy because a run that names a command loads only that group (program.ts):
 * every module loaded costs the warm path time (docs/performance.md). `commands` must be
 * exactly what the registration declares; test/unit/cli/command-groups.test.ts checks it.
 */
export interface CommandGroup {
  commands: readonly string[];
  load(): Promise<Registration>;
  /**
   * Runs the group's plain invocation without commander, or answers null to let commander
   * parse argv: the bridge, re-run after every exit, spares itself commander (src/cli/bridge-options.ts).
   */
  fast?(argv: readonly string[], io: CliIO): Promise<{ name: string; outcome: Outcome } | null>;
}

export const commandGroups: readonly CommandGroup[] = [
  { commands: ['teach'], load: async () => (await import('./teach/register.js')).register },
  { commands: ['send', 'ask', 'task', 'reply'], load: async () => (await import('./send/register.js')).register },
  { commands: ['messages'], load: async () => (await import('./messages/register.js')).register },
  { commands: ['fleet'], load: async () => (await import('./fleet/register.js')).register },
  { commands: ['session'], load: async () => (await import('./session/register.js')).register },
  { commands: ['inbox'], load: async () => (await import('./inbox/register.js')).register },
  { commands: ['hub'], load: async () => (await import('./hub/register.js')).register },
  { commands: ['demo'], load: async () => (await import('./demo/register.js')).register },
  { commands: ['setup', 'login', 'logout', 'upgrade'], load: async () => (await import('./account/register.js')).register },
  {
    commands: ['bridge'],
    load: async () => (await import('./bridge/register.js')).register,
    fast: async (argv, io) => (await import('./bridge/run.js')).runFast(argv, io),
  },
  { commands: ['__consumer'], load: async () => (await import('./consumer/register.js')).register },
  { commands: ['doctor'], load: async () => (await import('./doctor/register.js')).register },
  { commands: ['mcp'], load: async () => (await import('./mcp/register.js')).register },
];
