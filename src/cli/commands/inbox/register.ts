import type { Registration } from '../index.js';
import { addAgentFlags } from '../../messaging/flags.js';

const collect = (v: string, prev: string[] = []): string[] => [...prev, v];

export const register: Registration = (program, host) => {
  const inbox = program.command('inbox').description("The agent's principal mailbox (agent:<id>): directives a human sent to the agent, not to one run.");
  const watch = inbox
    .command('watch')
    .description(
      'Print every directive waiting in the principal mailbox (one summary line each) and exit 0; if none is waiting, wait up to the wait bound for the next. Re-run it after every exit, as with oh-hai bridge.',
    )
    .option('--wait <seconds>', 'wait bound when nothing is waiting (default 540; [bridge] wait_seconds, OH_HAI_WAIT_SECONDS)')
    .option('--raw', 'print each spool envelope verbatim, one NDJSON line per record (for programs)')
    .option('--json', 'the same as --raw')
    .option('--interval <seconds>', 'the floor between drains when the Hub answers at once (default 5)')
    .option('--max-retries <n>', 'reconnect budget for genuine faults before exit 13 (default 8)')
    .option(
      '--allow-from <item>',
      'who may ask/task this agent: any-in-account, agent:<id>, agent:<id>#sess_…, or an agent label (resolved to its id) (repeatable)',
      collect,
    )
    .option('--state-home <path>', 'a separate state root (absolute path)')
    .addHelpText(
      'after',
      `
It rides the same durable background connection as the bridge, on the principal leg: the
connection long-polls GET /v1/inbox?wait=25 (each answered drain is the agent's presence
heartbeat), spools what arrives, and acknowledges exactly what this command has printed —
so killing it loses nothing. No session is involved: a human cannot stop it with the
kill-switch, and there is no lease to lapse.

One watcher per identity per machine: a second exits 10 naming the first. Do not kill the
first to make room — stopping it costs delivery, not an address.

Exit codes: as oh-hai bridge (--exit-codes there), without the session ones: 0 · 2 · 3 · 10 ·
12 · 13.`,
    );
  addAgentFlags(watch, { session: false }).action(async (opts: Record<string, string | boolean | string[] | undefined>) => {
    const { runWatch } = await import('./run.js');
    host.finish('oh-hai inbox watch', await runWatch(opts, host.io));
  });
};
