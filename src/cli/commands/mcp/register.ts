import type { Registration } from '../index.js';

const collect = (value: string, previous: string[] = []): string[] => [...previous, value];

export const register: Registration = (program, host) => {
  program
    .command('mcp')
    .description(
      "Serve this agent's mailbox as MCP tools over stdio (oh_hai_send, oh_hai_ask, oh_hai_task, oh_hai_reply, oh_hai_read, oh_hai_messages, oh_hai_fleet, oh_hai_status), " +
        'for harnesses that speak MCP. It resolves the agent session exactly as `oh-hai bridge` does, so the two share one address and one state entry.',
    )
    .option('--session <name|sess_id>', "this agent session, as `oh-hai bridge --session` names it (default: the bridge's own resolution)")
    .option('--state-home <absolute path>', 'the state root the bridge uses (absolute only)')
    .option(
      '--allow-from <item>',
      'who may ask/task this agent, for a connection oh_hai_read starts: any-in-account, agent:<id>, agent:<id>#sess_…, or an agent label (resolved to its id) (repeatable)',
      collect,
    )
    .option('--transport <auto|sse|poll>', 'how a connection oh_hai_read starts drains (default auto)')
    .option('--interval <seconds>', 'long-poll interval of a connection oh_hai_read starts (default 5)')
    .option('--max-retries <n>', 'reconnect budget of a connection oh_hai_read starts (default 8)')
    .option('--wait <seconds>', "the most oh_hai_read's wait_seconds may ask for (default 540: the bridge's wait bound)")
    .option('--hub <url>', 'the Hub URL (default: MA2H_HUB_URL, then config)')
    .option('--agent <id>', 'which identity, when several tokens are configured')
    .addHelpText(
      'after',
      `
stdout carries JSON-RPC and nothing else; diagnostics go to stderr. Register it in a harness
with \`oh-hai teach --mcp\`. MCP tools cannot wake an agent: to be woken when mail arrives, run
\`oh-hai bridge\` as a background task and re-run it after every exit. While that bridge reads,
oh_hai_read is refused (exit 10 semantics) naming it.

A refusal is a tool error carrying the exit code the CLI would exit with, its name, and what
to do (oh-hai bridge --exit-codes). The server exits 0 when its client closes stdin, 130/143
on SIGINT/SIGTERM, and 2 on a bad knob before serving.`,
    )
    .action(async (opts: Record<string, string | string[] | undefined>) => {
      const { run } = await import('./run.js');
      host.finish('oh-hai mcp', await run(opts, host.io));
    });
};
