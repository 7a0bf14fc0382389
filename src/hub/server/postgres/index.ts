// The PostgreSQL store: loaded (with `pg`) only when a Hub is given a database URL.
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import type { Pool } from 'pg';
import type { Clock } from '../../../util/clock.js';
import type { DatabaseStats } from '../admin.js';
import type { HubMetrics } from '../metrics.js';
import { FailureLog, type BackgroundWork } from '../failure-log.js';
import type { HubLog } from '../log-sink.js';
import type { Store, WakeFrom, WakeTopic } from '../sql.js';
import { Lanes } from '../lanes.js';
import { constants, performance, PerformanceObserver } from 'node:perf_hooks';
import { hop, TRACE } from '../../../util/trace.js';
import { listen } from './listener.js';
import { notifier } from './notifier.js';
import { migrationWatch } from './migrating.js';
import { migrate, SERVING_LOCK_TIMEOUT_MS } from './schema.js';
import { postgresStore } from './store.js';
import { redactor, type DatabaseUrl } from './url.js';
import { DATABASE_UNAVAILABLE, SCHEMA_TOO_NEW } from '../database-errors.js';

export { parseDatabaseUrl, redactor, type DatabaseUrl } from './url.js';
export { SCHEMA_VERSION } from './schema.js';

export interface OpenPostgres {
  db: DatabaseUrl;
  local: Clock;
  offsetMs: number;
  /** Connections this instance may hold (the listener's and the notifier's are extra). */
  poolMax: number;
  /** How long a dropped listener or notifier connection waits before it is re-opened. */
  listenRetryMs: number;
  /** A committed wake-up: this instance's (`local`), another's, or another's for every mailbox of an agent (`agent`). */
  wake: (topic: WakeTopic, key: string, from: WakeFrom) => void;
  resync: () => void;
  /** Another version's migration let go of the tables and left the schema this code's: every stream reads its mailbox again (its reads were refused meanwhile). */
  servingAgain: () => void;
  /** The database was migrated past this code: every stream ends (its client reconnects, through the balancer, to an instance of the new version). */
  outdated: () => void;
  committed: () => void;
  effectFailed: (error: unknown) => void;
  log: HubLog;
  metrics: HubMetrics;
}

export interface PostgresHandle {
  store: Store;
  clock: Clock;
  /** Pool use and round trips, for /metrics. */
  stats: DatabaseStats;
}

/** The migration watch's connect and question: under /readyz's deadline (admin.ts READY_DEADLINE_MS). */
const PROBE_TIMEOUT_MS = 1500;
/** Its version read's wait for oh_hai_schema (no migration locks it; a client might): well under its question's bound. */
const PROBE_LOCK_TIMEOUT_MS = 500;

/** Open `n` connections at once and put them back idle; the first refusal is the error. */
async function fill(pool: Pool, n: number): Promise<void> {
  const opened = await Promise.allSettled(Array.from({ length: n }, () => pool.connect()));
  for (const c of opened) if (c.status === 'fulfilled') c.value.release();
  const refused = opened.find((c) => c.status === 'rejected');
  if (refused) throw refused.reason;
}

/**
 * Connect, migrate (under the advisory lock), and start listening. Every error that leaves
 * here has the URL and password redacted.
 */
export async function openPostgres(o: OpenPostgres): Promise<PostgresHandle> {
  // Through require: the launcher runs the bundle with vm.Script, which has no import().
  const pg = createRequire(import.meta.url)('pg') as typeof import('pg');
  const redact = redactor(o.db);
  // Instants are BIGINT milliseconds: numbers, as on the SQLite store (exact below 2^53). Asked
  // for every column of every result: one parser for all of them, not a new function each time.
  const types = { getTypeParser: (oid: number, format?: 'text' | 'binary') => (oid === 20 ? Number : pg.types.getTypeParser(oid, format)) };
  // Every statement is prepared (store.ts) and is an index lookup whose best plan does not hang on
  // its parameters' values, so each connection plans it once, generically: by default PostgreSQL
  // first plans it afresh five times, and a batched page read of 32 streams costs ~10 ms to plan.
  const config = { connectionString: o.db.url, application_name: 'oh-hai-hub', types, options: '-c plan_cache_mode=force_generic_plan' };
  // The whole pool is opened at start and kept open (min = max): a connection made on demand
  // costs whoever asked for it a backend start and a SCRAM exchange, 30–140 ms on a loaded
  // machine, and a burst of streams made other clients' requests pay exactly that.
  // Its statements give up on a lock after SERVING_LOCK_TIMEOUT_MS (a migration's tables: migrating.ts); the listener's and notifier's wait as before.
  const pool = new pg.Pool({ ...config, options: `${config.options} -c lock_timeout=${SERVING_LOCK_TIMEOUT_MS}`, max: o.poolMax, min: o.poolMax });
  // Stream work (pages, stream connects) holds at most half the pool; requests are served first.
  const lanes = new Lanes(o.poolMax, Math.max(1, Math.floor(o.poolMax / 2)));
  const failures = (work: BackgroundWork, what: string) =>
    new FailureLog({ work, what, clock: o.local, log: o.log, redact, counted: (w) => o.metrics.backgroundFailed(w) });
  // The database gone, every idle connection fails at once (a line each, before): one line, and one when a new one connects.
  const idle = failures('pool', "the pool's idle connections");
  pool.on('error', (e) => idle.failed(e));
  pool.on('connect', () => idle.worked());
  const instance = randomBytes(6).toString('hex');
  try {
    await fill(pool, o.poolMax);
    const client = await pool.connect();
    try {
      await migrate(client, { log: (line) => o.log(redact(line)) });
    } finally {
      client.release();
    }
  } catch (e) {
    await pool.end().catch(() => {});
    const code = (e as { code?: unknown }).code;
    const message = redact(e instanceof Error ? e.message : String(e));
    throw Object.assign(new Error(`the database at ${o.db.shown} ${code === SCHEMA_TOO_NEW ? 'is too new' : 'cannot be used'}: ${message}`), {
      code: code === SCHEMA_TOO_NEW ? SCHEMA_TOO_NEW : DATABASE_UNAVAILABLE,
    });
  }
  // Its own connection, bounded: it answers while the pool's are stuck on locks (/readyz waits for it).
  const migrating = migrationWatch({
    connect: () =>
      new pg.Client({
        ...config,
        application_name: 'oh-hai-hub-probe',
        options: `${config.options} -c lock_timeout=${PROBE_LOCK_TIMEOUT_MS}`,
        connectionTimeoutMillis: PROBE_TIMEOUT_MS,
        query_timeout: PROBE_TIMEOUT_MS,
      }),
    log: (line) => o.log(redact(line)),
    serving: o.servingAgain,
    outdated: o.outdated,
  });
  const store = postgresStore({
    pool,
    types,
    lanes,
    local: o.local,
    offsetMs: o.offsetMs,
    wake: (topic, key) => o.wake(topic, key, 'local'),
    notify: (wakes) => notices.send(wakes),
    committed: o.committed,
    effectFailed: o.effectFailed,
    retried: (code) => o.metrics.retried(code),
    migrating,
  });
  // Its commits need not reach the disk: a hint is worthless after the database crashes, and the
  // rows it names were made durable by their own commits before they were queued here.
  const notices = notifier({
    connect: () => new pg.Client({ ...config, application_name: 'oh-hai-hub-notify', options: `${config.options} -c synchronous_commit=off` }),
    instance,
    now: () => store.clock.now(),
    retryMs: o.listenRetryMs,
    failures: failures('notifier', 'the database notifier'),
  });
  const listener = listen({
    connect: () => new pg.Client({ ...config, application_name: 'oh-hai-hub-listen' }),
    instance,
    wake: (topic, key, family) => o.wake(topic, key, family ? 'agent' : 'remote'),
    committed: o.committed,
    resync: o.resync,
    retryMs: o.listenRetryMs,
    failures: failures('listener', 'the database listener'),
    heard: (sentAt) => o.metrics.notified(store.clock.now() - sentAt),
  });
  await listener.ready;
  const sampling = TRACE ? sampleForTrace(lanes) : null;
  // The first unit calibrates the instance's clock to the database's.
  await store.write(async () => undefined);
  return {
    store: {
      ...store,
      close: async () => {
        sampling?.();
        await migrating.close();
        await listener.close();
        await store.close();
        await notices.close();
      },
    },
    clock: store.clock,
    stats: {
      pool: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
      lanes: () => lanes.stats(),
      roundTrips: () => store.roundTrips,
      migration: () => migrating.check(),
    },
  };
}

/** The push trace's sampling period: the event loop's delay and the pool's queues, every this many ms. */
const SAMPLE_MS = 20;

/**
 * The push trace only (OH_HAI_TRACE): what a slow push's neighbourhood held — every
 * {@link SAMPLE_MS}, the event loop's delay past the period and the lanes' waiting and held counts
 * (`ev.sample <delay µs>:<waiting request/page/connect>:<held request/stream>`), and every
 * collection with its kind and length (`ev.gc <kind>:<µs>`, stamped at its start). Returns its stop.
 */
function sampleForTrace(lanes: Lanes): () => void {
  let last = process.hrtime.bigint();
  const timer = setInterval(() => {
    const now = process.hrtime.bigint();
    const l = lanes.stats();
    const late = (now - last) / 1000n - BigInt(SAMPLE_MS * 1000);
    last = now;
    hop('ev.sample', `${late}:${l.request.waiting}/${l.page.waiting}/${l.connect.waiting}:${l.request.held}/${l.stream.held}`, now);
  }, SAMPLE_MS);
  timer.unref();
  const gc = new PerformanceObserver((list) => {
    const origin = process.hrtime.bigint() - BigInt(Math.round(performance.now() * 1e6));
    for (const e of list.getEntries()) {
      const kind = ((e as unknown as { detail?: { kind?: number } }).detail ?? {}).kind;
      hop(
        'ev.gc',
        `${kind === constants.NODE_PERFORMANCE_GC_MINOR ? 'minor' : kind === constants.NODE_PERFORMANCE_GC_MAJOR ? 'major' : String(kind)}:${Math.round(e.duration * 1000)}`,
        origin + BigInt(Math.round(e.startTime * 1e6)),
      );
    }
  });
  gc.observe({ entryTypes: ['gc'] });
  return () => {
    clearInterval(timer);
    gc.disconnect();
  };
}
