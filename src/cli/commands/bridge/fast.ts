import type { CliIO } from '../../io.js';
import type { Outcome } from '../../../core/index.js';
import { parseBridgeArgv } from './options.js';
import { run } from './run.js';

/** The plain run of the bridge without commander; null when argv needs commander (options.ts). */
export async function runFast(argv: readonly string[], io: CliIO): Promise<{ name: string; outcome: Outcome } | null> {
  const opts = parseBridgeArgv(argv);
  return opts === null ? null : { name: 'oh-hai bridge', outcome: await run(opts, io) };
}
