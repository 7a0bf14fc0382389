import { bridgeCommandGroups } from './commands/index.js';
import { runProcess } from './program.js';

/**
 * The entry bin/oh-hai runs for `oh-hai bridge`, bundled on its own (dist/bridge.cjs,
 * scripts/bundle.mjs): the command an agent re-runs after every exit carries only its own
 * group and those its retired subcommands forward to, and writes its output with write(2)
 * (FdOutput) rather than through Node's streams (docs/performance.md).
 */
export const main = (): Promise<void> => runProcess(bridgeCommandGroups, 'descriptors');
