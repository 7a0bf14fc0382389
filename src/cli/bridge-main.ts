import { parseBridgeArgv } from './bridge-options.js';
import { run } from './commands/bridge/run.js';
import { runProcessWithout } from './program.js';

/**
 * The entry bin/oh-hai runs for `oh-hai bridge`, bundled on its own (dist/bridge.cjs,
 * scripts/bundle.mjs): the plain run an agent repeats after every exit, argv read by
 * parseBridgeArgv, output written with write(2) (FdOutput) rather than through Node's
 * streams. Anything else under `bridge` (help, a retired subcommand or flag, a usage error)
 * is handed to `fullCli`, the whole CLI's bundle (src/cli/launch.cts), which runs it as
 * before: commander and the groups it could reach cost this bundle's every run their share
 * of the code cache (docs/performance.md "Warm bridge (session 12)").
 */
export function main(fullCli: () => void): Promise<void> | void {
  const argv = process.argv.slice(2);
  const opts = parseBridgeArgv(argv);
  if (opts === null) return fullCli();
  return runProcessWithout(argv, 'descriptors', async (io) => ({ name: 'oh-hai bridge', outcome: await run(opts, io) }));
}
