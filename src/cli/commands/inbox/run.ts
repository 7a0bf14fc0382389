import { openStateDir, type IdentityRecord } from '../../../spool/index.js';
import { formatAddress } from '../../../hub/contract/index.js';
import { EXIT, type Result, toOutcome, type Outcome } from '../../../core/index.js';
import type { CliIO } from '../../io.js';
import { startReadingStatus } from '../../reading-status.js';
import { launchDetached, type LaunchRequest } from '../../../spawn/index.js';
import { readReaderKnobs, processSignals, StopRequest, type SignalSource, watchPrincipal, WATCH_NAME as NAME } from '../../../reader/index.js';
import { connectionSettings, resolveAgent, stateEntryError } from '../../resolve/index.js';
import { principalStateDirFor, type AgentFlagValues } from '../../messaging/index.js';

export interface WatchOptions extends AgentFlagValues {
  wait?: string;
  interval?: string;
  maxRetries?: string;
  allowFrom?: string[];
  raw?: boolean;
}

export interface WatchDeps {
  signals: SignalSource;
  launch: (req: LaunchRequest) => Promise<Result<{ pid: number }>>;
}

const defaults: WatchDeps = { signals: processSignals, launch: launchDetached };

/** The identity the principal entry records, for doctor and for anyone listing entries. */
const identityOf = (hub: string, agentId: string): IdentityRecord => ({
  hub,
  agent_id: agentId,
  session_key: 'principal',
  key_source: 'principal leg',
  pinned: null,
  name: null,
});

export async function runWatch(opts: WatchOptions, io: CliIO, deps: WatchDeps = defaults): Promise<Outcome> {
  const stop = new StopRequest(deps.signals);
  try {
    const knobs = readReaderKnobs(io.env);
    if (!knobs.ok) return toOutcome(knobs.error);
    const resolved = await resolveAgent({
      flags: {
        hub: opts.hub,
        agent: opts.agent,
        stateHome: opts.stateHome,
        wait: opts.wait,
        interval: opts.interval,
        maxRetries: opts.maxRetries,
        allowFrom: opts.allowFrom,
      },
      io,
    });
    if (!resolved.ok) return toOutcome(resolved.error);
    const a = resolved.value;
    for (const w of a.warnings) io.stderr.write(`${NAME}: ${w}\n`);

    const opened = openStateDir(principalStateDirFor(a.stateRoot, a.hubUrl, a.agentId), {
      create: true,
      log: { clock: io.clock, pid: io.pid, deny: [a.credential.token] },
    });
    if (!opened.ok) return toOutcome(stateEntryError(opened));
    const stateDir = opened.value;
    const identity = identityOf(a.hubUrl, a.agentId);
    const have = stateDir.read('identity');
    if (have.state !== 'ok' || JSON.stringify(have.value) !== JSON.stringify(identity)) stateDir.write('identity', identity);

    const waitMs = a.settings.bridge.waitSeconds * 1000;
    const raw = opts.raw === true || opts.json === true;
    const stopStatus = startReadingStatus(io, NAME, stateDir, waitMs, raw);
    try {
      return await watchPrincipal({
        stateDir,
        address: formatAddress(a.agentId),
        wanted: connectionSettings(a, 'principal', opts.agent ?? null),
        waitMs,
        directory: { stateRoot: a.stateRoot, hubUrl: a.hubUrl, agentId: a.agentId },
        io,
        stop,
        knobs: knobs.value,
        raw,
        launch: deps.launch,
        named: {
          allowFrom: (opts.allowFrom ?? []).length > 0,
          transport: false,
          interval: opts.interval !== undefined,
          maxRetries: opts.maxRetries !== undefined,
        },
      });
    } finally {
      stopStatus();
    }
  } finally {
    stop.dispose();
  }
}
