import { randomBytes } from 'node:crypto';
import { networkInterfaces } from 'node:os';
import type { CliIO } from '../../io.js';
import { plainHttpWarning } from '../../../config/index.js';
import { VERSION } from '../../version.js';
import { EXIT, usageError, type Outcome, readKnobs } from '../../../core/index.js';
import { resolveDataDir } from '../../../hub/server/data-dir.js';
import { clientAddress, parseTrustProxy, type TrustedProxies } from '../../../hub/server/client-address.js';
import { hubLogSink, type LogFormat } from '../../../hub/server/log-sink.js';
import type { ServeFlags } from './register.js';
import type { HubConfig } from '../../../hub/server/index.js';
import type { Store } from '../../../hub/server/sql.js';
import type { DatabaseUrl } from '../../../hub/server/postgres/url.js';

type Built = { ok: true; config: HubConfig; randomKey: boolean } | { ok: false; outcome: Outcome };

/** Flags > environment > defaults; every knob checked together so the message names the flag to fix. */
async function buildConfig(flags: ServeFlags, io: CliIO): Promise<Built> {
  const { HUB_DEFAULTS, checkConfig, defaultHubConfig, parseConfigTokens, parseSqliteDriverChoice, SQLITE_DRIVER_ENV } =
    await import('../../../hub/server/index.js');
  const driver = parseSqliteDriverChoice(io.env[SQLITE_DRIVER_ENV]);
  if (!driver.ok) return { ok: false, outcome: usageError(driver.reason, 'invalid_setting') };
  let maxWait: number = HUB_DEFAULTS.maxWaitSeconds;
  if (flags.maxWaitSeconds !== undefined) maxWait = flags.maxWaitSeconds;
  else if (io.env.MA2H_MAX_WAIT_SECONDS !== undefined && io.env.MA2H_MAX_WAIT_SECONDS !== '') {
    const v = Number(io.env.MA2H_MAX_WAIT_SECONDS);
    if (!Number.isFinite(v) || v < 0)
      return { ok: false, outcome: usageError(`MA2H_MAX_WAIT_SECONDS must be a number of seconds ≥ 0, got "${io.env.MA2H_MAX_WAIT_SECONDS}"`) };
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
  const database = await databaseOf(flags, io);
  if (!database.ok) return database;
  if (database.value !== null && randomKey) {
    return {
      ok: false,
      outcome: usageError(
        'a Hub on a shared database needs MA2H_SIGNING_KEY: every instance of the deployment must sign deliveries with the same key, or a client that reconnects to another instance rejects what it pushes',
      ),
    };
  }
  const knobs = readKnobs(io.env, ['hubDbPoolMax', 'hubListenRetryMs', 'hubCredentialCacheMs', 'hubShutdownStreamsMs', 'hubShutdownWorkMs']);
  if (!knobs.ok) return { ok: false, outcome: usageError(knobs.error.message, knobs.error.code) };
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
    database: database.value,
    databasePoolMax: knobs.value.hubDbPoolMax,
    listenRetryMs: knobs.value.hubListenRetryMs,
    credentialCacheMs: knobs.value.hubCredentialCacheMs,
    shutdownStreamsMs: knobs.value.hubShutdownStreamsMs,
    shutdownWorkMs: knobs.value.hubShutdownWorkMs,
    sqliteDriver: driver.value,
  };
  const problem = checkConfig(config);
  return problem === null ? { ok: true, config, randomKey } : { ok: false, outcome: usageError(problem) };
}

type Parsed<T> = { ok: true; value: T } | { ok: false; outcome: Outcome };

/**
 * `--database` or OH_HAI_HUB_DATABASE_URL. A password in argv is refused (every user of the
 * machine can read argv); in the environment or PGPASSFILE it is fine, and never printed.
 */
async function databaseOf(flags: ServeFlags, io: CliIO): Promise<Parsed<DatabaseUrl | null>> {
  const raw = flags.database ?? io.env.OH_HAI_HUB_DATABASE_URL;
  if (raw === undefined || raw === '') return { ok: true, value: null };
  const { parseDatabaseUrl } = await import('../../../hub/server/postgres/url.js');
  const parsed = parseDatabaseUrl(raw);
  const where = flags.database !== undefined ? '--database' : 'OH_HAI_HUB_DATABASE_URL';
  if (!parsed.ok) return { ok: false, outcome: usageError(`${where}: ${parsed.reason}`) };
  if (flags.database !== undefined && parsed.value.password !== null) {
    return {
      ok: false,
      outcome: usageError(
        `--database ${parsed.value.shown} carries a password, and argv is visible to every user of this machine; put the URL in OH_HAI_HUB_DATABASE_URL, or the password in PGPASSFILE (or PGPASSWORD)`,
      ),
    };
  }
  return { ok: true, value: parsed.value };
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
  let adminListen: { host: string; port: number } | undefined;
  if (flags.adminListen !== undefined) {
    const { parseListen } = await import('../../../hub/server/admin.js');
    const parsed = parseListen(flags.adminListen);
    if (parsed === null) return usageError(`--admin-listen ${flags.adminListen} is not host:port (e.g. 127.0.0.1:9417, or :9417 for loopback)`);
    adminListen = parsed;
  }
  let trustProxy: TrustedProxies | undefined;
  // The environment serves a unit file or container that sets it once for every instance.
  const trusted = flags.trustProxy ?? (io.env.OH_HAI_HUB_TRUST_PROXY || undefined);
  if (trusted !== undefined) {
    const parsed = parseTrustProxy(trusted);
    if (!parsed.ok) return usageError(`${flags.trustProxy !== undefined ? '--trust-proxy' : 'OH_HAI_HUB_TRUST_PROXY'}: ${parsed.reason}`);
    trustProxy = parsed.value;
  }
  const format = flags.logFormat ?? 'text';
  if (format !== 'text' && format !== 'json') return usageError(`--log-format ${format} must be text or json`);
  const redact = config.database === null ? (t: string) => t : (await import('../../../hub/server/postgres/url.js')).redactor(config.database);
  const sink = hubLogSink(format, io, redact);
  const out = sink.out;
  const stopped = stopSignal();
  const { createHubServer, formatUrl, interfaceUrls, wildcardFamily, STORE_IN_USE, DATABASE_REFUSED, SQLITE_UNAVAILABLE } =
    await import('../../../hub/server/index.js');
  const { mountWebInbox } = await import('../../../hub/server/web/index.js');
  let url = '';
  let store: Store | null = null;
  const web = mountWebInbox({
    clock: io.clock,
    baseUrl: () => url,
    store: () => {
      if (store === null) throw new Error('the web inbox was asked for its store before the Hub had started');
      return store;
    },
    signingKey: config.signingKey,
    clientAddress: (req) => clientAddress(req, trustProxy ?? null),
    ...(flags.webSigninDelaySeconds === undefined ? {} : { signInDelaySeconds: flags.webSigninDelaySeconds }),
  });
  let server;
  try {
    server = await createHubServer({
      config,
      clock: io.clock,
      pid: io.pid,
      log: sink.err,
      extraRoutes: web.routes,
      ...(sink.access ? { access: sink.access } : {}),
      ...(adminListen ? { adminListen } : {}),
      ...(trustProxy ? { trustProxy } : {}),
    });
    url = server.url;
    store = server.core.store;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === STORE_IN_USE) return usageError((e as Error).message, 'data_dir_in_use');
    if (typeof code === 'string' && DATABASE_REFUSED.has(code)) return usageError(redact((e as Error).message), 'database_unavailable');
    if (code === SQLITE_UNAVAILABLE) return usageError((e as Error).message, 'sqlite_unavailable');
    if (code === 'EADDRINUSE') return usageError(`${config.host}:${config.port} is already in use; pick another --port (0 = any free port)`, 'address_in_use');
    if (code === 'EACCES' || code === 'EPERM') {
      return usageError(
        `cannot listen on ${config.host}:${config.port} or write ${config.dataDir} (${code}); pick another --port or --data`,
        'permission_denied',
      );
    }
    if (code === 'EADDRNOTAVAIL') return usageError(`--host ${config.host} is not an address of this machine`, 'address_not_available');
    throw e;
  }
  if (server.createdAccount)
    out(`hub: created account ${server.accountId}; its human token is in ${server.humanTokenPath} (0600) — the admin commands read it from there`);
  if (server.humanTokenPath === null)
    out(
      `hub: the account ${server.accountId} was created by another instance; copy its human-token file into ${server.dataDir} to run the admin commands here`,
    );
  out(`hub: data ${server.dataDir}`);
  if (config.database !== null) out(`hub: store PostgreSQL ${config.database.shown}`);
  if (built.randomKey) out('hub: signing key is random for this run (set MA2H_SIGNING_KEY to keep one across restarts)');
  if (config.faultInjection) out('hub: fault injection is ON (POST /v1/_faults) — a test Hub, never a deployment');
  out(`hub: web inbox at ${server.url}/ (sign in with the human token)`);
  // A wildcard --host is no address to open: server.url is loopback, and other machines need this one's own addresses.
  // Listed only then: os.networkInterfaces throws where the OS refuses to list them (Android), which is no reason to stop.
  if (wildcardFamily(config.host) !== null) {
    let others: string[] | null = null;
    let unlisted = '';
    try {
      others = interfaceUrls(config.host, server.port, networkInterfaces());
    } catch (e) {
      unlisted = e instanceof Error ? e.message : String(e);
    }
    out(
      others === null
        ? `hub: --host ${config.host} listens on every interface; this machine's addresses could not be listed (${unlisted}): from another machine, use one of them with port ${server.port}; from this one, ${server.url}/`
        : others.length > 0
          ? `hub: --host ${config.host} listens on every interface: from another machine, ${others.map((u) => `${u}/`).join(' or ')} (whichever its network reaches); from this one, ${server.url}/`
          : `hub: --host ${config.host} listens on every interface, but this machine has no address beyond loopback: ${server.url}/ is the only way in`,
    );
  }
  if (trustProxy !== undefined) out(`hub: client addresses from X-Forwarded-For of ${trustProxy.shown}`);
  if (server.adminUrl !== null) out(`hub: admin (healthz, readyz, metrics) at ${server.adminUrl}`);
  // The clients warn about plain http to another host (plainHttpWarning); the Hub that invites it says so too.
  if (plainHttpWarning(formatUrl(config.host, server.port)) !== null)
    out(
      `hub: ⚠️ --host ${config.host} serves plain http beyond this machine: agents' tokens and the web inbox's sign-in cross the network unencrypted. ` +
        'Listen on 127.0.0.1 behind a TLS-terminating proxy (--trust-proxy; docs/deploy.md) unless this network is yours alone',
    );
  out(`hub: listening on ${server.url}`);
  const sig = await stopped;
  await server.close();
  await web.close();
  out(`hub: stopped (${sig})`);
  return { exit: EXIT.ok, style: 'silent' };
}
