import { Option, type Command } from 'commander';
import type { Registration } from '../index.js';
import { BRIDGE_OPTIONS } from '../../bridge-options.js';

const collect = (value: string, previous: string[] = []): string[] => [...previous, value];

/**
 * Commander hands a flag that `bridge` itself declares to `bridge` even when it follows a
 * subcommand (`bridge stop --session x`): the retired subcommands read both levels
 * (`optsWithGlobals`), or a flag typed after them would be silently dropped. Their own
 * declarations of those flags are for their --help and man page.
 */
const parentFlags = (cmd: Command): Record<string, unknown> => cmd.parent?.opts() ?? {};

export const register: Registration = (program, host) => {
  const finish = (outcome: Parameters<typeof host.finish>[1]) => host.finish('oh-hai bridge', outcome);
  const bridge = program
    .command('bridge')
    .description(
      'Print every message waiting for this agent session (one summary line each) and exit 0; if none is waiting, wait up to the wait bound ' +
        'for the next. Run it as a background task and RE-RUN IT AFTER EVERY EXIT, branching on the exit code (--exit-codes).',
    );
  for (const o of BRIDGE_OPTIONS) {
    if (o.takes === 'list') bridge.option(o.flags, o.description, collect);
    else bridge.option(o.flags, o.description);
  }
  bridge
    .addOption(new Option('--once').hideHelp())
    .addOption(new Option('--until-event [event]').hideHelp())
    .addOption(new Option('--stream').hideHelp())
    .addOption(new Option('--attach-only').hideHelp())
    .action(async (opts) => {
      const { run } = await import('./run.js');
      finish(await run(opts, host.io));
    });

  bridge
    .command('consume', { hidden: true })
    .description('retired: the old spelling of the private connection entrypoint (warns and forwards)')
    .helpOption(false)
    .allowUnknownOption()
    .allowExcessArguments()
    .argument('[args...]')
    .action(async (args: string[], _opts, cmd: Command) => {
      const { consume } = await import('../../retired.js');
      finish(await consume(args, parentFlags(cmd), host.io, host.forward));
    });

  bridge
    .command('status', { hidden: true })
    .description('retired: forwards to the bridge checks of oh-hai doctor --self-test')
    .option('--session <name|sess_id>', 'the agent session whose bridge to check (carried over to oh-hai doctor --self-test)')
    .option('--state-home <absolute path>', 'the state root it runs under (carried over to oh-hai doctor --self-test)')
    .option('--json', "doctor's --json envelope (carried over)")
    .action(async (_opts, cmd: Command) => {
      const { status } = await import('../../retired.js');
      finish(await status(cmd.optsWithGlobals(), host.io));
    });

  bridge
    .command('stop', { hidden: true })
    .description('retired: forwards to oh-hai session close (--keep-session: --keep-connection; --purge: session close --purge)')
    .option('--keep-session', 'forward to oh-hai session close --keep-connection: the connection stops, the session stays open')
    .option('--purge', "forward to oh-hai session close, then clear this agent session's state entry")
    .option('--session <name|sess_id>', 'the agent session to stand down (carried over to oh-hai session close)')
    .option('--state-home <absolute path>', 'the state root it runs under (carried over to oh-hai session close)')
    .option('--hub <url>', 'the Hub URL (carried over to oh-hai session close)')
    .option('--agent <id>', 'which identity, when several tokens are configured (carried over to oh-hai session close)')
    .action(async (_opts, cmd: Command) => {
      const { stop } = await import('../../retired.js');
      finish(await stop(cmd.optsWithGlobals(), host.io, host.forward));
    });
};
