import { DOCTOR_EXIT_TABLE, exitTableCells } from '../../../core/index.js';
import { formatTable, PLAIN } from '../../terminal/index.js';
import type { Registration } from '../index.js';

export const register: Registration = (program, host) => {
  program
    .command('doctor')
    .description(
      "Check this machine's oh-hai setup, one line per check (pass / warn / fail, with the fix for anything not passing): Node.js, config, " +
        'state root, sender policy, Hub, capability, clock offset, credential. --self-test adds a throwaway round trip through the Hub and ' +
        "this agent session's bridge health, read-only.",
    )
    .option(
      '--self-test',
      'also run the throwaway round trip (session → addressed notify → drain → verify → ack → reachability → close), then check this bridge',
    )
    .option('--json', 'print one JSON envelope instead of lines (fields: docs/doctor.md)')
    .option('--session <name|sess_id>', 'with --self-test: the agent session whose bridge to check (default: this one, as oh-hai bridge resolves it)')
    .option('--state-home <absolute path>', 'the state root to check (absolute only; default $XDG_STATE_HOME, else ~/.local/state)')
    .option('--hub <url>', 'the Hub URL (default: MA2H_HUB_URL, then config)')
    .option('--agent <id>', 'which identity, when several tokens are configured')
    .addHelpText('after', `\nExit codes:\n${formatTable(exitTableCells(DOCTOR_EXIT_TABLE), host.io.terminal?.stdout ?? PLAIN)}`)
    .action(async (opts) => {
      const { run } = await import('../../doctor/index.js');
      host.finish('oh-hai doctor', await run(opts, host.io));
    });
};
