import { Option } from 'commander';
import type { Registration } from '../index.js';

const collect = (value: string, previous: string[] = []): string[] => [...previous, value];

export interface ConsumerFlags {
  entry?: string;
  mode: 'auto' | 'direct';
  session?: string;
  hub?: string;
  stateHome?: string;
  allowFrom?: string[];
  transport?: string;
  interval?: string;
  maxRetries?: string;
  agent?: string;
}

/** The private connection entrypoint: hidden from help, started by the reader or a service manager. */
export const register: Registration = (program, host) => {
  program
    .command('__consumer', { hidden: true })
    .description('the background connection (private: oh-hai bridge starts it; a service manager runs it with --mode direct --session <name>)')
    .option('--entry <dir>', 'the state entry to drain (the reader passes it)')
    .addOption(
      new Option('--mode <mode>', 'auto: started by the reader; direct: foreground under a service manager').choices(['auto', 'direct']).default('auto'),
    )
    .option('--session <name|sess_id>', 'direct mode: the agent session to drain (resolves its own state entry)')
    .option('--hub <url>', 'direct mode: the Hub URL')
    .option('--state-home <absolute path>', 'direct mode: a separate state root')
    .option('--allow-from <item>', 'direct mode: who may ask/task this agent (repeatable)', collect)
    .option('--transport <auto|sse|poll>', 'direct mode: how to drain')
    .option('--interval <seconds>', 'direct mode: long-poll interval')
    .option('--max-retries <n>', 'direct mode: reconnect budget before exit 13')
    .option('--agent <id>', 'direct mode: which identity, when several tokens are configured')
    .action(async (opts: ConsumerFlags) => {
      const { run } = await import('./run.js');
      host.finish('oh-hai __consumer', await run(opts, host.io));
    });
};
