import type { Registration } from '../index.js';
import { addAgentFlags } from '../../messaging/flags.js';

export const register: Registration = (program, host) => {
  const session = program.command('session').description("This agent session's Hub session: stand it down, or ask the Hub how it stands.");

  const close = session
    .command('close')
    .description(
      'Stand this agent session down: stop the background connection, wait for its clean stop, close the session at the Hub, forget the id locally — in that order.',
    )
    .option('--keep-connection', 'only stop the connection and leave the session open (how a changed setting is applied: then run oh-hai bridge)')
    .option('--purge', "then clear this agent session's state entry (what the retired `bridge stop --purge` did)")
    .option('--json', 'one JSON object saying what was stopped, closed and forgotten (fields: JSON OUTPUT in the man page)')
    .addHelpText(
      'after',
      `
Closing first would race the connection, which would register a replacement session.
A running oh-hai bridge of this agent session then exits 15 (STOOD DOWN): nothing failed;
run it again only if this run should have a new address. Mail still unacknowledged at the
Hub bounces to its senders.

Exit codes: 0 stood down (or, with --keep-connection, stopped) · 4 nothing to stand down ·
3 the credential is dead · 10 the connection runs on another host · 13 the Hub is unreachable
(the session was not closed and stays recorded: run it again).`,
    );
  addAgentFlags(close, { session: true }).action(async (opts: Record<string, string | boolean | undefined>) => {
    const { runClose } = await import('./run.js');
    host.finish('oh-hai session close', await runClose(opts, host.io));
  });

  const status = session
    .command('status')
    .description("Ask the Hub — the authority — how this agent session's session stands, and show this host's record beside it.")
    .option('--json', "one JSON object: the Hub's view and this host's (fields: JSON OUTPUT in the man page)")
    .addHelpText(
      'after',
      `
Each fact says whose clock it is: the Hub's instants are printed verbatim; ages ("last
renewed 2m 10s ago") are measured on this machine's clock. Nothing is "time remaining".
Exit codes: 0 · 4 no session recorded, or the Hub does not know it · 3 · 13.`,
    );
  addAgentFlags(status, { session: true }).action(async (opts: Record<string, string | boolean | undefined>) => {
    const { runStatus } = await import('./run.js');
    host.finish('oh-hai session status', await runStatus(opts, host.io));
  });
};
