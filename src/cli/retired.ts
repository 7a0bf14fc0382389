import type { CliIO } from './io.js';
import type { Outcome } from '../core/index.js';

/**
 * The surface retired in 0.10.0 (product doc: "Removed and retired in 0.10.0"): flags that
 * warn once and are ignored, and subcommands that warn once and forward, returning the
 * forwarded command's exit code.
 */

export const RETIRED_FLAGS = ['--once', '--until-event', '--stream', '--attach-only'] as const;

export interface RetiredFlagValues {
  once?: boolean;
  untilEvent?: boolean | string;
  stream?: boolean;
  attachOnly?: boolean;
}

export function retiredFlagWarnings(o: RetiredFlagValues): string[] {
  const given = [o.once, o.untilEvent, o.stream, o.attachOnly];
  return RETIRED_FLAGS.filter((_, i) => given[i] !== undefined && given[i] !== false).map(
    (flag) =>
      `${flag} was removed in 0.10.0 and is ignored (a later release makes it a usage error, exit 2); drop it — plain oh-hai bridge is the whole invocation`,
  );
}

/** Runs another oh-hai command in this process (CommandHost.forward); it prints its own stop line, so a forwarding outcome is silent. */
type Forward = (argv: string[]) => Promise<number>;

const warn = (io: CliIO, line: string): void => void io.stderr.write(`oh-hai bridge: ${line}\n`);

/** The bridge flags the connection's direct mode also takes, as they were typed. */
const CONNECTION_FLAGS: Record<string, string> = {
  session: '--session',
  stateHome: '--state-home',
  hub: '--hub',
  agent: '--agent',
  transport: '--transport',
  interval: '--interval',
  maxRetries: '--max-retries',
  allowFrom: '--allow-from',
};

function asArgv(flags: Record<string, unknown>): string[] {
  return Object.entries(CONNECTION_FLAGS).flatMap(([key, flag]) => {
    const v = flags[key];
    const values = Array.isArray(v) ? v : v === undefined ? [] : [v];
    return values.flatMap((x) => [flag, String(x)]);
  });
}

export async function consume(args: string[], bridgeFlags: Record<string, unknown>, io: CliIO, forward: Forward): Promise<Outcome> {
  warn(io, 'bridge consume is the old spelling of a now-private entrypoint; forwarding to oh-hai __consumer (run oh-hai bridge instead)');
  return { exit: await forward(['__consumer', ...asArgv(bridgeFlags), ...args]), style: 'silent' };
}

export interface StatusFlags {
  session?: string;
  stateHome?: string;
  json?: boolean;
}

const carried = (f: { session?: string; stateHome?: string }): string[] => [
  ...(f.session !== undefined ? ['--session', f.session] : []),
  ...(f.stateHome !== undefined ? ['--state-home', f.stateHome] : []),
];

export async function status(f: StatusFlags, io: CliIO): Promise<Outcome> {
  warn(io, 'bridge status is retired; forwarding to the bridge checks of oh-hai doctor --self-test (a later release makes it an unknown subcommand, exit 2)');
  const { runBridgeChecks } = await import('./doctor/index.js');
  return runBridgeChecks(f, io);
}

export interface StopFlags {
  session?: string;
  stateHome?: string;
  hub?: string;
  agent?: string;
  keepSession?: boolean;
  purge?: boolean;
}

export async function stop(f: StopFlags, io: CliIO, forward: Forward): Promise<Outcome> {
  const args = ['session', 'close', ...(f.keepSession ? ['--keep-connection'] : []), ...(f.purge ? ['--purge'] : [])];
  warn(io, `bridge stop is retired; forwarding to oh-hai ${args.join(' ')} (a later release makes it an unknown subcommand, exit 2)`);
  const identity = [...carried(f), ...(f.hub !== undefined ? ['--hub', f.hub] : []), ...(f.agent !== undefined ? ['--agent', f.agent] : [])];
  return { exit: await forward([...args, ...identity]), style: 'silent' };
}
