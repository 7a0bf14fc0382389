import { randomBytes } from 'node:crypto';
import type { CliIO } from '../../io.js';
import { VERSION } from '../../version.js';
import { EXIT } from '../../exit-codes.js';
import { usageError, type Outcome } from '../../outcome.js';
import { resolveDataDir } from './data-dir.js';
import type { ServeFlags } from './register.js';
import type { HubConfig } from '../../../hub/server/index.js';

type Built = { ok: true; config: HubConfig; randomKey: boolean } | { ok: false; outcome: Outcome };

/** Flags > environment > defaults; every knob checked together so the message names the flag to fix. */
async function buildConfig(flags: ServeFlags, io: CliIO): Promise<Built> {
  const { HUB_DEFAULTS, checkConfig, defaultHubConfig, parseConfigTokens } = await import('../../../hub/server/index.js');
  let maxWait: number = HUB_DEFAULTS.maxWaitSeconds;
  if (flags.maxWaitSeconds !== undefined) maxWait = flags.maxWaitSeconds;
  else if (io.env.MA2H_MAX_WAIT_SECONDS !== undefined && io.env.MA2H_MAX_WAIT_SECONDS !== '') {
    const v = Number(io.env.MA2H_MAX_WAIT_SECONDS);
    if (!Number.isFinite(v) || v < 0) return { ok: false, outcome: usageError(`MA2H_MAX_WAIT_SECONDS must be a number of seconds ≥ 0, got "${io.env.MA2H_MAX_WAIT_SECONDS}"`) };
    maxWait = v;
  }
  let configTokens: HubConfig['configTokens'] = [];
  const rawTokens = io.env.MA2H_AGENT_TOKENS;
  if (rawTokens !== undefined && rawTokens.trim() !== '') {
    const parsed = parseConfigTokens(rawTokens);
    if (!parsed.ok) return { ok: false, outcome: usageError(parsed.reason) };
    configTokens = parsed.value;
  }
  const givenKey = flags.signingKey ?? io.env.MA2H_SIGNING_KEY;
  const randomKey = givenKey === undefined || givenKey === '';
  const base = defaultHubConfig({
    dataDir: resolveDataDir(flags.data, io.env, io.cwd),
    signingKey: randomKey ? randomBytes(32).toString('hex') : givenKey,
    version: VERSION,
  });
  const leaseMin = flags.leaseMinSeconds ?? base.leaseMinSeconds;
  const leaseMax = flags.leaseMaxSeconds ?? Math.max(base.leaseMaxSeconds, leaseMin);
  const config: HubConfig = {
    ...base,
    host: flags.host ?? base.host,
    port: flags.port ?? base.port,
    leaseMinSeconds: leaseMin,
    // An unnamed default follows the bounds a test narrowed, rather than contradicting them.
    leaseDefaultSeconds: flags.leaseDefaultSeconds ?? Math.min(leaseMax, Math.max(leaseMin, base.leaseDefaultSeconds)),
    leaseMaxSeconds: leaseMax,
    streamMaxHoldSeconds: flags.streamMaxHoldSeconds ?? base.streamMaxHoldSeconds,
    keepaliveSeconds: flags.keepaliveSeconds ?? base.keepaliveSeconds,
    maxWaitSeconds: maxWait,
    presenceSeconds: flags.presenceSeconds ?? base.presenceSeconds,
    messageTtlSeconds: flags.messageTtlSeconds ?? base.messageTtlSeconds,
    replayWindowSeconds: flags.replayWindowSeconds ?? base.replayWindowSeconds,
    holderStaleSeconds: flags.holderStaleSeconds ?? base.holderStaleSeconds,
    pageBytes: flags.pageBytes ?? base.pageBytes,
    streamWriteTimeoutSeconds: flags.streamWriteTimeoutSeconds ?? base.streamWriteTimeoutSeconds,
    maxConnections: flags.maxConnections ?? base.maxConnections,
    clockOffsetMs: flags.clockOffsetMs ?? base.clockOffsetMs,
    faultInjection: flags.faultInjection === true,
    agentDirectory: flags.agentDirectory !== false,
    configTokens,
  };
  const problem = checkConfig(config);
  return problem === null ? { ok: true, config, randomKey } : { ok: false, outcome: usageError(problem) };
}

/** Resolves on the first SIGTERM or SIGINT: the Hub's only way to stop, always a clean close. */
function stopSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const on = (sig: NodeJS.Signals) => {
      process.off('SIGTERM', on);
      process.off('SIGINT', on);
      resolve(sig);
    };
    process.on('SIGTERM', on);
    process.on('SIGINT', on);
  });
}

export async function runServe(flags: ServeFlags, io: CliIO): Promise<Outcome> {
  const built = await buildConfig(flags, io);
  if (!built.ok) return built.outcome;
  const { config } = built;
  const out = (line: string) => io.stdout.write(line + '\n');
  const stopped = stopSignal();
  const { createHubServer, STORE_IN_USE } = await import('../../../hub/server/index.js');
  const { mountWebInbox } = await import('../../../hub/server/web/index.js');
  let url = '';
  const web = mountWebInbox({ clock: io.clock, baseUrl: () => url });
  let server;
  try {
    server = await createHubServer({ config, clock: io.clock, pid: io.pid, log: (line) => io.stderr.write(line + '\n'), extraRoutes: web.routes });
    url = server.url;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === STORE_IN_USE) return usageError((e as Error).message, 'data_dir_in_use');
    if (code === 'EADDRINUSE') return usageError(`${config.host}:${config.port} is already in use; pick another --port (0 = any free port)`, 'address_in_use');
    if (code === 'EACCES' || code === 'EPERM') {
      return usageError(`cannot listen on ${config.host}:${config.port} or write ${config.dataDir} (${code}); pick another --port or --data`, 'permission_denied');
    }
    if (code === 'EADDRNOTAVAIL') return usageError(`--host ${config.host} is not an address of this machine`, 'address_not_available');
    throw e;
  }
  if (server.createdAccount) out(`hub: created account ${server.accountId}; its human token is in ${server.humanTokenPath} (0600) — the admin commands read it from there`);
  out(`hub: data ${server.dataDir}`);
  if (built.randomKey) out('hub: signing key is random for this run (set MA2H_SIGNING_KEY to keep one across restarts)');
  if (config.faultInjection) out('hub: fault injection is ON (POST /v1/_faults) — a test Hub, never a deployment');
  out(`hub: web inbox at ${server.url}/ (sign in with the human token)`);
  out(`hub: listening on ${server.url}`);
  const sig = await stopped;
  await server.close();
  await web.close();
  out(`hub: stopped (${sig})`);
  return { exit: EXIT.ok, style: 'silent' };
}
