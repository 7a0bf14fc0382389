import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { Clock } from '../../util/clock.js';
import { writeFileAtomic } from '../../util/fs-durable.js';
import { bootAccount } from './account.js';
import type { Authenticated } from './auth.js';
import { coalesced } from './coalesce.js';
import { CredentialCache } from './credentials.js';
import { Bus } from './bus.js';
import type { HubConfig } from './config.js';
import { capConnections, defaultMaxConnections, type ConnectionCounts } from './connections.js';
import { privateDataDir } from './data-dir.js';
import type { AccessRecord, HeldRequests, HubCore } from './core.js';
import { metricsSlot, type HubMetrics } from './metrics.js';
import { Signer } from './delivery.js';
import { FaultTable } from './faults.js';
import { HUB_RECORD_FILE } from './files.js';
import { hashToken, hubClock, iso } from './ids.js';
import { sweepExpired } from './inbox.js';
import { StreamRegistry } from './registry.js';
import { TURN_BYTES, TurnBudget } from './turns.js';
import type { AdminListener, DatabaseStats } from './admin.js';
import { createRouter, stopping as stoppingReply, type ExtraRoutes } from './router.js';
import { send } from './http.js';
import { apiRoutes } from './routes.js';
import { reconcileSession, streamsSeen, sweepLapsed } from './sessions.js';
import type { Store, WakeFrom, WakeTopic } from './sql.js';
import { openStore, sqliteStore } from './store.js';
import { StreamEnds } from './seen.js';
import { clientAddress, type TrustedProxies } from './client-address.js';
import { FailureLog, type BackgroundWork } from './failure-log.js';
import type { HubLog } from './log-sink.js';
import { hop, TRACE } from '../../util/trace.js';
import { reachableUrl } from './listen-url.js';
import { REHEARSED_PUSHES, rehearsePush } from './rehearse.js';

/** What `hub.json` in the data dir records, so admin commands find a running Hub. */
export interface HubRecord {
  url: string;
  pid: number;
  started_at: string;
}

export interface HubServerOptions {
  config: HubConfig;
  /** Our real clock; the Hub's clock is this plus `config.clockOffsetMs` (on a database, the database's clock). */
  clock: Clock;
  /** Recorded in hub.json. */
  pid: number;
  /** One line per event the operator should see (internal errors); never a secret. Fields go into JSON lines. */
  log: HubLog;
  /** Paths outside the API (the web inbox), tried before the 404. */
  extraRoutes?: ExtraRoutes;
  /** One record per answered request (`--log-format json`). */
  access?: (r: AccessRecord) => void;
  /** Serve /healthz, /readyz and /metrics here (`--admin-listen`); never the public port. */
  adminListen?: { host: string; port: number };
  /** The proxies whose X-Forwarded-For names the client (`--trust-proxy`); none by default. */
  trustProxy?: TrustedProxies;
}

export interface HubServer {
  /** Where this machine reaches the Hub: `--host`, or loopback when that is a wildcard (0.0.0.0, ::). */
  url: string;
  port: number;
  dataDir: string;
  accountId: string;
  /** True when this start created the account and its human token. */
  createdAccount: boolean;
  /** This instance's copy of the human token; null when another instance created the account. */
  humanTokenPath: string | null;
  /** The services, for an embedding that needs more than HTTP (tests, the web inbox). */
  core: HubCore;
  /** Where /healthz, /readyz and /metrics answer; null without --admin-listen. */
  adminUrl: string | null;
  /** Settles once the push's rehearsal at start has run (rehearse.ts): true when each of its pushes was written. */
  pushRehearsed: Promise<boolean>;
  /** Stop accepting, end open streams with `reconnect {"reason":"shutdown"}`, close the store. */
  close(): Promise<void>;
}

/** `p`, or `ms` passing, whichever comes first. */
async function within(p: Promise<unknown>, ms: number): Promise<void> {
  let bound: NodeJS.Timeout | undefined;
  await Promise.race([p, new Promise<void>((resolve) => (bound = setTimeout(resolve, ms)))]);
  clearTimeout(bound);
}

interface Opened {
  store: Store;
  clock: Clock;
  database: DatabaseStats | null;
}

/**
 * The store this Hub runs on: SQLite in the data dir, or the shared PostgreSQL database
 * (its client is loaded only here). `wake` hears every committed wake-up, and where from.
 */
async function openHubStore(
  o: HubServerOptions,
  bus: Bus,
  metrics: HubMetrics,
  wake: (topic: WakeTopic, key: string, from: WakeFrom) => void,
  resync: () => void,
  retire: () => void,
): Promise<Opened> {
  const { config } = o;
  const effectFailed = (e: unknown) => o.log(`hub: after-commit effect failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
  if (config.database === null) {
    const clock = hubClock(o.clock, config.clockOffsetMs);
    const store = sqliteStore(openStore(config.dataDir, config.sqliteDriver), {
      clock,
      wake: (t, k) => wake(t, k, 'local'),
      committed: () => bus.deliver(),
      effectFailed,
    });
    return { store, clock, database: null };
  }
  const { openPostgres } = await import('./postgres/index.js');
  const pg = await openPostgres({
    db: config.database,
    local: o.clock,
    offsetMs: config.clockOffsetMs,
    poolMax: config.databasePoolMax,
    listenRetryMs: config.listenRetryMs,
    wake,
    resync,
    // The stream reads refused while a migration held the tables are read again (a push's cursor did not move past them).
    servingAgain: () => bus.mail.emitAll(),
    outdated: retire,
    committed: () => bus.deliver(),
    effectFailed,
    log: o.log,
    metrics,
  });
  return { store: pg.store, clock: pg.clock, database: pg.stats };
}

/** Start a reference Hub on `config.host:config.port` with its store in `config.dataDir` or the database. */
export async function createHubServer(o: HubServerOptions): Promise<HubServer> {
  const { config } = o;
  const bus = new Bus();
  const streams = new StreamRegistry();
  const turns = new TurnBudget(Math.min(config.pageBytes, TURN_BYTES));
  const heldRequests: HeldRequests = { mail: 0, message: 0 };
  let core: HubCore | null = null;

  const reconcile = async (sessionId: string): Promise<void> => (core === null ? undefined : reconcileSession(core, sessionId));
  const onReconcileError = (e: unknown) => o.log(`hub: re-checking a session another instance changed failed: ${e instanceof Error ? e.message : String(e)}`);
  const credentials = new CredentialCache<Authenticated>(o.clock, config.credentialCacheMs);
  const wake = (topic: WakeTopic, key: string, from: WakeFrom) => {
    if (topic === 'credentials') return credentials.forgetAll();
    if (topic === 'session') {
      // This instance's own streams were told in the unit's after-commit effects.
      if (from === 'local') return;
      // Heard by stream connects in flight (not yet registered, so not reconciled here).
      bus.session.emit(key);
      void reconcile(key).catch(onReconcileError);
      return;
    }
    if (from === 'agent') bus[topic].emitFamily(key);
    else bus[topic].emit(key);
  };
  const resync = () => {
    // A revocation notified meanwhile may have been lost.
    credentials.forgetAll();
    // `released` rewinds each stream's cursor: a missed release may have put mail behind it.
    bus.released.emitAll();
    bus.mail.emitAll();
    bus.message.emitAll();
    bus.session.emitAll();
    for (const id of streams.sessions()) void reconcile(id).catch(onReconcileError);
  };

  // The data dir holds the store (or, with a database, this instance's human token and hub.json).
  const wasOpen = privateDataDir(config.dataDir);
  if (wasOpen !== null)
    o.log(`hub: the data dir ${config.dataDir} was ${wasOpen.toString(8).padStart(4, '0')}; tightened it to 0700 (it holds the store and the human token)`);
  const metrics = metricsSlot();
  // Timer-driven work logs when it starts failing and when it works again, not each failure (failure-log.ts).
  const failureLog = (work: BackgroundWork, what: string) =>
    new FailureLog({ work, what, clock: o.clock, log: o.log, counted: (w) => metrics.backgroundFailed(w) });
  const opened = await openHubStore(o, bus, metrics, wake, resync, () => streams.retire());
  const { store } = opened;
  let boot;
  let admin: AdminListener | null = null;
  let connections: ConnectionCounts | null = null;
  try {
    boot = await bootAccount(store, config.dataDir, 'reference hub account');
    if (o.adminListen !== undefined) {
      const { startAdmin } = await import('./admin.js');
      admin = await startAdmin(o.adminListen, {
        store,
        openStreams: () => streams.count(),
        pushTurns: () => turns.counts(),
        heldRequests: () => heldRequests,
        connections: () => connections,
        database: opened.database,
      });
      metrics.target = admin.metrics;
    }
  } catch (e) {
    await admin?.close();
    await store.close();
    throw e;
  }
  // On a shared store no other instance sees our streams: they learn of them from the
  // session rows, refreshed well inside the presence and holder-stale windows.
  const seenMs = Math.max(20, (Math.min(config.presenceSeconds, config.holderStaleSeconds) * 1000) / 3);
  core = {
    store,
    config,
    clock: opened.clock,
    bus,
    streams,
    // Ends gather for at most a tenth of the refresh below (1 s with the default windows): a
    // session is counted seen that much past its stream's end at most.
    ends: new StreamEnds(store, failureLog('stream_ends', "recording streams' ends"), Math.min(1000, seenMs / 10)),
    pushes: failureLog('push', 'pushing to streams'),
    faults: new FaultTable(),
    account: boot.account,
    credentials,
    configAgents: new Map(config.configTokens.map((t) => [hashToken(t.token), t.agentId])),
    log: o.log,
    access: o.access ?? null,
    metrics,
    turns,
    held: heldRequests,
    clientAddress: (req) => clientAddress(req, o.trustProxy ?? null),
  };
  const hub: HubCore = core;
  const dispatch = createRouter(hub, apiRoutes(hub, new Signer(hub)), o.extraRoutes ?? null, o.log);
  // Requests and background writes under way: a stop waits for them before it ends the store.
  let stopping = false;
  const inflight = new Set<Promise<unknown>>();
  const track = (p: Promise<unknown>): void => {
    inflight.add(p);
    const done = () => inflight.delete(p);
    p.then(done, done);
  };
  const server: Server = createServer((req, res) => {
    if (!stopping) return track(dispatch(req, res));
    // A request on a kept-alive connection while stopping: refused whole, and the connection with it.
    req.resume();
    send(res, stoppingReply());
  });
  // Held streams and long-polls answer slowly by design; only the request itself is timed.
  server.requestTimeout = 60_000;
  server.keepAliveTimeout = 10_000;
  connections = capConnections(server, config.maxConnections ?? defaultMaxConnections());

  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(config.port, config.host, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (e) {
    await admin?.close();
    await store.close();
    throw e;
  }
  // The first push after a start no longer compiles the push path (rehearse.ts); a rehearsal that
  // fails changes nothing the Hub does, and its first push compiles what the rehearsal did not.
  const pushRehearsed = rehearsePush(config, hub.clock).then(
    (written) => written.split('event: entries').length - 1 === REHEARSED_PUSHES,
    () => false,
  );
  const port = (server.address() as AddressInfo).port;
  // hub.json's URL is for the admin commands on this machine, and the web inbox calls the API through it: loopback for a wildcard --host.
  const url = reachableUrl(config.host, port);
  const record: HubRecord = { url, pid: o.pid, started_at: iso(o.clock.now()) };
  writeFileAtomic(path.join(config.dataDir, HUB_RECORD_FILE), JSON.stringify(record, null, 2) + '\n', 0o600);

  // Leases and TTLs are stored instants; the sweep only notices that one has passed.
  const sweepMs = Math.max(20, Math.min(1000, (config.leaseMinSeconds * 1000) / 4));
  // One sweep at a time (a tick during one asks for one more after it): a sweep slowed by row
  // locks never piles up units that hold the pool's connections other requests need.
  const sweeping = store.as({ name: 'sweep', lane: 'request' });
  const sweepFailures = failureLog('sweep', 'the sweep');
  const sweep = coalesced(async () => {
    try {
      const more = await sweeping.write(async (tx) => {
        await sweepLapsed(hub, tx);
        return sweepExpired(hub, tx);
      });
      sweepFailures.worked();
      // A backlog of due entries (after a downtime) drains one batch per transaction, each right after the last.
      if (more && !stopping) void sweep();
    } catch (e) {
      sweepFailures.failed(e);
    }
  });
  track(sweep());
  const sweeper = setInterval(() => track(sweep()), sweepMs);
  // One presence write at a time, like the sweep; the one after it records the streams held then.
  // Only streams that connected a period ago or more: a younger connect's renewal wrote its session
  // (and a consumer's holder) seen itself, and every stream reconnects once per hold, so at deploy/'s
  // 30 s hold and the 20 s period two thirds of a fleet's streams are skipped. The bound this keeps:
  // a stream skipped here sent its renewal after `before`, so its session was seen less than a
  // period ago; the next write, a period on, writes it unless it connected again meanwhile (skipped
  // then for the same reason). So a held session's seen_at (a consumer's holder_seen_at too) is at
  // most two periods old, where it was one, and the holder and presence rules count
  // min(holder-stale, presence) = three periods (seenMs above): a period is left for a late timer
  // or a slow write.
  const presenceFailures = failureLog('presence', 'recording open streams');
  const present = coalesced(async () => {
    const before = hub.clock.monotonic() - seenMs;
    const held = streams.held(before);
    // The push trace only: the rows this write asks for (bench/hub-cluster.mjs --trace counts them per period).
    if (TRACE) hop('ev.presence', String(held.length));
    if (held.length > 0)
      await streamsSeen(store, held).then(
        () => presenceFailures.worked(),
        (e: unknown) => presenceFailures.failed(e),
      );
  });
  const seen = store.shared ? setInterval(() => track(present()), seenMs) : undefined;

  let closing: Promise<void> | null = null;
  return {
    url,
    port,
    dataDir: config.dataDir,
    accountId: boot.account.id,
    createdAccount: boot.created,
    humanTokenPath: boot.humanTokenPath,
    core: hub,
    adminUrl: admin?.url ?? null,
    pushRehearsed,
    close() {
      // In order: stop accepting (connections, and requests on kept-alive ones: 503), end the
      // streams, cut what is still held (long-polls), let the statements under way finish,
      // record the streams' ends, and only then end the store; whatever outlives the waits is
      // refused by the closed store with a 503, never the pool's error.
      closing ??= (async () => {
        stopping = true;
        clearInterval(sweeper);
        clearInterval(seen);
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        // A client that reads nothing could hold a stream's last write forever: the wait is bounded.
        await within(streams.shutdownAll(), config.shutdownStreamsMs);
        server.closeAllConnections();
        await closed;
        // Their clients are gone; the work is bounded so a stuck statement cannot hold the stop.
        await within(Promise.allSettled([...inflight]), config.shutdownWorkMs);
        await within(hub.ends.drain(), config.shutdownWorkMs);
        await admin?.close();
        await store.close();
      })();
      return closing;
    },
  };
}
