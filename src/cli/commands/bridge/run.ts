import { hostName } from '../../../spool/index.js';
import { exitTableCells, type Result, success, toOutcome, type Outcome } from '../../../core/index.js';
import { type CliIO } from '../../io.js';
import { startReadingStatus } from '../../reading-status.js';
import { formatTable, PLAIN } from '../../terminal/index.js';
import { writeFlushed } from '../../../util/output.js';
import { processInspector, resolveBridge } from '../../resolve/index.js';
import { BRIDGE_NAME as NAME, sessionLeg } from '../../session-leg.js';
import type { LaunchRequest } from '../../../spawn/index.js';
import { Reader, processSignals, readReaderKnobs, StopRequest, type NamedFlags, type SignalSource } from '../../../reader/index.js';
import { retiredFlagWarnings } from '../../retired.js';
import { parseBridgeArgv, type BridgeOptions } from '../../bridge-options.js';

export interface BridgeDeps {
  signals: SignalSource;
  launch: (req: LaunchRequest) => Promise<Result<{ pid: number }>>;
}

const defaults: BridgeDeps = {
  signals: processSignals,
  // Only a run that starts the connection needs the double fork; an adopting run never loads it.
  launch: async (req) => (await import('../../../spawn/index.js')).launchDetached(req),
};

export async function run(opts: BridgeOptions, io: CliIO, deps: BridgeDeps = defaults): Promise<Outcome> {
  if (opts.exitCodes) {
    await writeFlushed(io.stdout, formatTable(exitTableCells(), io.terminal?.stdout ?? PLAIN));
    return success();
  }
  for (const w of retiredFlagWarnings(opts)) io.stderr.write(`${NAME}: ${w}\n`);

  const stop = new StopRequest(deps.signals);
  try {
    const knobs = readReaderKnobs(io.env);
    if (!knobs.ok) return toOutcome(knobs.error);
    const resolved = await resolveBridge({ flags: opts, io, create: true, host: hostName(), inspect: processInspector });
    if (!resolved.ok) return toOutcome(resolved.error);
    const named: NamedFlags = {
      allowFrom: (opts.allowFrom ?? []).length > 0,
      transport: opts.transport !== undefined,
      interval: opts.interval !== undefined,
      maxRetries: opts.maxRetries !== undefined,
    };
    const leg = sessionLeg(resolved.value, named, opts.agent ?? null, io);
    const raw = opts.raw === true || opts.json === true;
    const stopStatus = startReadingStatus(io, NAME, leg.stateDir, leg.waitMs, raw);
    try {
      return await new Reader({ leg, io, stop, knobs: knobs.value, raw, launch: deps.launch }).execute();
    } finally {
      stopStatus();
    }
  } finally {
    stop.dispose();
  }
}

/** The plain run of the bridge without commander; null when argv needs commander (src/cli/bridge-options.ts). */
export async function runFast(argv: readonly string[], io: CliIO): Promise<{ name: string; outcome: Outcome } | null> {
  const opts = parseBridgeArgv(argv);
  return opts === null ? null : { name: 'oh-hai bridge', outcome: await run(opts, io) };
}
