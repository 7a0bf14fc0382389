import type { Command } from 'commander';

export interface AgentFlagValues {
  hub?: string;
  agent?: string;
  session?: string;
  stateHome?: string;
  json?: boolean;
}

/** The flags that pick who is talking to which Hub — the bridge's, with the same meaning. */
export function addAgentFlags(cmd: Command, opts: { session: boolean }): Command {
  cmd.option('--hub <url>', 'the Hub (default: MA2H_HUB_URL, then [hub] url in the config)');
  cmd.option('--agent <id>', 'which agent identity to act as, when several credentials resolve');
  if (opts.session) {
    cmd.option('--session <name>', "this agent session, as `oh-hai bridge --session` names it (default: the bridge's own resolution)");
    cmd.option('--state-home <path>', 'the state root the bridge uses (absolute path)');
  }
  return cmd;
}
