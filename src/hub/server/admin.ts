import { readdirSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ConnectionCounts } from './connections.js';
import type { HeldRequests } from './core.js';
import type { Lane, LanesStats, Share } from './lanes.js';
import type { HubMetrics } from './metrics.js';
import type { Store, StoreHealth } from './sql.js';
import { reachableUrl } from './listen-url.js';

/** What the admin listener reads from the running Hub. */
export interface AdminSources {
  store: Store;
  /** Streams open on this instance now. */
  openStreams: () => number;
  /** Stream pages' share of the event loop: the most bytes one turn carried, and pages put off to a later turn. */
  pushTurns: () => { largest: number; deferred: number };
  /** Drains (`mail`) and message watches (`message`) held open now. */
  heldRequests: () => HeldRequests;
  /** The public listener's TCP connections (null until it listens). */
  connections: () => ConnectionCounts | null;
  /** The shared database's pool and round trips (PostgreSQL only). */
  database: DatabaseStats | null;
}

export interface DatabaseStats {
  pool(): { total: number; idle: number; waiting: number };
  /** The pool's shares (stream work, everyone else's requests) and stream work's two lanes (src/hub/server/lanes.ts). */
  lanes(): LanesStats;
  /** Round trips since start by work (route pattern, push, sweep, …), inside units and outside them. */
  roundTrips(): ReadonlyMap<string, { unit: number; read: number }>;
  /** Why this instance cannot serve now because another instance's migration holds the tables, or null (asked by /readyz). */
  migration(): Promise<string | null>;
}

export interface AdminListener {
  url: string;
  metrics: HubMetrics;
  close(): Promise<void>;
}

/** `host:port`, `[v6]:port` or `:port` (loopback); null when it is not one. */
export function parseListen(raw: string): { host: string; port: number } | null {
  const m = /^(?:\[([^\]]+)\]|([^:]*)):(\d{1,5})$/.exec(raw);
  if (!m) return null;
  const port = Number(m[3]);
  if (port > 65535) return null;
  return { host: m[1] ?? (m[2] === '' ? '127.0.0.1' : m[2]!), port };
}

const PROCESS_PREFIX = 'oh_hai_hub_process_';

/** Open descriptors: Linux 6.2 and later give /proc/self/fd's count as its size; older kernels list it. */
function openDescriptors(): number | null {
  try {
    const size = statSync('/proc/self/fd').size;
    // Listing it opened one more.
    return size > 0 ? size : readdirSync('/proc/self/fd').length - 1;
  } catch {
    return null;
  }
}

/**
 * Node's process metrics: prom-client's defaults, less the ones that walk every socket at each scrape.
 * At 10,000 held streams its open_fds listed /proc/self/fd (10,000 names) and its active handles and
 * resources walked the loop's handles four times: a scrape took 16–19 ms of one turn, against ~2 ms
 * now (docs/deploy.md, session 19, scrape11). The descriptors are counted from the directory's size,
 * the resources listed once for both their series; `nodejs_active_handles` (an undocumented API,
 * the same sockets and servers by their JS class) is not kept: `nodejs_active_resources` counts them.
 */
function processMetrics(prom: typeof import('prom-client'), registry: import('prom-client').Registry): void {
  prom.collectDefaultMetrics({ register: registry, prefix: PROCESS_PREFIX });
  for (const name of ['process_open_fds', 'nodejs_active_handles', 'nodejs_active_handles_total', 'nodejs_active_resources', 'nodejs_active_resources_total'])
    registry.removeSingleMetric(PROCESS_PREFIX + name);
  if (process.platform === 'linux')
    new prom.Gauge({
      name: `${PROCESS_PREFIX}process_open_fds`,
      help: 'Number of open file descriptors.',
      registers: [registry],
      collect() {
        const n = openDescriptors();
        if (n !== null) this.set(n);
      },
    });
  // One listing per scrape for both series: the by-type gauge is collected first (registration order), the total reads its count.
  let resources = 0;
  new prom.Gauge({
    name: `${PROCESS_PREFIX}nodejs_active_resources`,
    help: 'Number of active resources that are currently keeping the event loop alive, grouped by async resource type.',
    labelNames: ['type'],
    registers: [registry],
    collect() {
      const list = process.getActiveResourcesInfo();
      const byType = new Map<string, number>();
      for (const type of list) byType.set(type, (byType.get(type) ?? 0) + 1);
      this.reset();
      for (const [type, n] of byType) this.set({ type }, n);
      resources = list.length;
    },
  });
  new prom.Gauge({
    name: `${PROCESS_PREFIX}nodejs_active_resources_total`,
    help: 'Total number of active resources.',
    registers: [registry],
    collect() {
      this.set(resources);
    },
  });
}

/**
 * How long /readyz waits for the store before it answers 503. A balancer's check wants a prompt
 * answer, and PostgreSQL's health() queues in the request lane: while a migration held the tables
 * it waited 10–15 s behind requests stuck on the locks (docs/deploy.md, session 20, lock12). Well
 * under a balancer's usual check timeout (5 s), well over a healthy answer (a few ms).
 */
export const READY_DEADLINE_MS = 2000;

/**
 * How long checks share one health() that has not answered. Sharing keeps a store that does not
 * answer from getting a pile of health() in its queue; the bound keeps one stuck on a dead
 * connection (the pool has no statement timeout) from holding /readyz at 503 after the database
 * answers again.
 */
export const READY_SHARE_MS = 30_000;

/** The store's health within `deadlineMs`; a health() asked less than `shareMs` ago and still waiting is shared. */
export function healthWithin(store: Pick<Store, 'health'>, deadlineMs: number, shareMs: number): () => Promise<StoreHealth> {
  let pending: { asked: Promise<StoreHealth>; at: number } | null = null;
  const late: StoreHealth = {
    ok: false,
    reason: `the database did not answer within ${deadlineMs} ms (its pool busy, or a table locked, e.g. by another instance's migration)`,
  };
  return async () => {
    const now = performance.now();
    if (pending === null || now - pending.at >= shareMs) {
      const mine: { asked: Promise<StoreHealth>; at: number } = {
        asked: store.health().finally(() => {
          if (pending === mine) pending = null;
        }),
        at: now,
      };
      pending = mine;
    }
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<StoreHealth>((resolve) => (timer = setTimeout(() => resolve(late), deadlineMs)));
    try {
      return await Promise.race([pending.asked, deadline]);
    } finally {
      clearTimeout(timer);
    }
  };
}

/**
 * The operator's port (`--admin-listen`, off by default): /healthz (the process answers),
 * /readyz (the store answers and is migrated: take the instance out of the balancer
 * otherwise) and /metrics (Prometheus). Unauthenticated, so it is never the public port.
 */
export async function startAdmin(listen: { host: string; port: number }, src: AdminSources): Promise<AdminListener> {
  // prom-client is loaded only here, and only when an admin address was asked for.
  const prom = createRequire(import.meta.url)('prom-client') as typeof import('prom-client');
  const registry = new prom.Registry();
  processMetrics(prom, registry);
  const requests = new prom.Counter({
    name: 'oh_hai_hub_requests_total',
    help: 'Requests answered, by route pattern and status',
    labelNames: ['route', 'status'],
    registers: [registry],
  });
  const sends = new prom.Counter({ name: 'oh_hai_hub_sends_total', help: 'Messages and directives accepted by this instance', registers: [registry] });
  const push = new prom.Histogram({
    name: 'oh_hai_hub_push_latency_seconds',
    help: 'From an entry being queued to its first write on a stream of this instance (deployment clock)',
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [registry],
  });
  const pagesPerRead = new prom.Histogram({
    name: 'oh_hai_hub_push_pages_per_read',
    help: 'Streams whose pages one statement read (PostgreSQL: the streams woken while the read before it waited)',
    buckets: [1, 2, 4, 8, 16, 32],
    registers: [registry],
  });
  const lag = new prom.Histogram({
    name: 'oh_hai_hub_notify_lag_seconds',
    help: 'From another instance committing a wake-up to this instance hearing it (PostgreSQL NOTIFY)',
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5],
    registers: [registry],
  });
  const lapsed = new prom.Counter({
    name: 'oh_hai_hub_leases_lapsed_total',
    help: 'Sessions this instance found lapsed (lease ran out)',
    registers: [registry],
  });
  const stops = new prom.Counter({
    name: 'oh_hai_hub_operator_stops_total',
    help: 'Operator stops (kill-switch) recorded through this instance',
    registers: [registry],
  });
  const backgroundFailures = new prom.Counter({
    name: 'oh_hai_hub_background_failures_total',
    help: 'Failures of timer-driven work (sweep, presence, stream_ends, push, listener, notifier, pool): each one, where the log says when they start and stop',
    labelNames: ['work'],
    registers: [registry],
  });
  const retries = new prom.Counter({
    name: 'oh_hai_hub_db_retries_total',
    help: 'Database units run again, by SQLSTATE',
    labelNames: ['code'],
    registers: [registry],
  });
  new prom.Gauge({
    name: 'oh_hai_hub_open_streams',
    help: 'SSE streams open on this instance',
    registers: [registry],
    collect() {
      this.set(src.openStreams());
    },
  });
  new prom.Gauge({
    name: 'oh_hai_hub_held_requests',
    help: 'Requests held open waiting (long-poll): drains by topic="mail", GET /v1/messages/:id?wait by topic="message"',
    labelNames: ['topic'],
    registers: [registry],
    collect() {
      for (const [topic, n] of Object.entries(src.heldRequests())) this.set({ topic }, n);
    },
  });
  // Against oh_hai_hub_requests_total: how many requests a connection carries (a bridge's stream
  // reconnects at every hold bound over the connection it kept; a client that does not keep its
  // connection costs the Hub a TCP accept and set-up per request).
  let acceptedSeen = 0;
  new prom.Counter({
    name: 'oh_hai_hub_connections_accepted_total',
    help: 'TCP connections the public listener accepted',
    registers: [registry],
    collect() {
      const n = src.connections()?.accepted ?? 0;
      if (n > acceptedSeen) this.inc(n - acceptedSeen);
      acceptedSeen = n;
    },
  });
  new prom.Gauge({
    name: 'oh_hai_hub_open_connections',
    help: 'TCP connections open on the public listener',
    registers: [registry],
    collect() {
      this.set(src.connections()?.open ?? 0);
    },
  });
  new prom.Gauge({
    name: 'oh_hai_hub_push_turn_bytes_max',
    help: 'The most delivery bytes stream pages carried in one turn of the event loop since start (bounded by --page-bytes plus one entry)',
    registers: [registry],
    collect() {
      this.set(src.pushTurns().largest);
    },
  });
  let deferredSeen = 0;
  new prom.Counter({
    name: 'oh_hai_hub_push_pages_deferred_total',
    help: 'Stream pages that waited for a later turn of the event loop, the turn they asked in being full',
    registers: [registry],
    collect() {
      const n = src.pushTurns().deferred;
      if (n > deferredSeen) this.inc(n - deferredSeen);
      deferredSeen = n;
    },
  });
  const database = src.database;
  if (database !== null) {
    new prom.Gauge({
      name: 'oh_hai_hub_db_pool_connections',
      help: 'Database pool connections, by state (idle, busy) and clients waiting for one',
      labelNames: ['state'],
      registers: [registry],
      collect() {
        const p = database.pool();
        this.set({ state: 'idle' }, p.idle);
        this.set({ state: 'busy' }, p.total - p.idle);
        this.set({ state: 'waiting' }, p.waiting);
      },
    });
    // Kept as plain numbers by the store (no prom-client on the query path); read at scrape.
    const seen = new Map<string, number>();
    /** What one of the lanes' running totals (named `key`) grew by since the last scrape. */
    const grown = (key: string, total: number): number => {
      const n = total - (seen.get(key) ?? 0);
      seen.set(key, total);
      return n;
    };
    /** One series per share or lane in `keys` (labelled `label`): a counter for `waited`, a gauge for a most-at-once. */
    const byLane = (name: string, help: string, label: string, keys: ReadonlyArray<Share | Lane>, stat: 'waited' | 'waitingMax' | 'heldMax') => {
      const series = { name, help, labelNames: [label], registers: [registry] };
      if (stat === 'waited')
        new prom.Counter({
          ...series,
          collect() {
            const l = database.lanes();
            for (const k of keys) this.inc({ [label]: k }, grown(`${name} ${k}`, l[k].waited));
          },
        });
      else
        new prom.Gauge({
          ...series,
          collect() {
            const l = database.lanes();
            for (const k of keys) this.set({ [label]: k }, l[k][stat]);
          },
        });
    };
    /** A counter following one of the lanes' running totals. */
    const total = (name: string, help: string, pick: (l: LanesStats) => number) =>
      new prom.Counter({
        name,
        help,
        registers: [registry],
        collect() {
          this.inc(grown(name, pick(database.lanes())));
        },
      });
    const SHARES: readonly Share[] = ['request', 'stream'];
    const STREAM_WORK: readonly Lane[] = ['page', 'connect'];
    byLane(
      'oh_hai_hub_db_lane_waited_total',
      'Database work that had to wait for a pool connection, by share of the pool (stream: stream pages and connects; request: everything else)',
      'lane',
      SHARES,
      'waited',
    );
    byLane(
      'oh_hai_hub_db_lane_waiting_max',
      'The most database work of a share of the pool waiting for a connection at once, since start',
      'lane',
      SHARES,
      'waitingMax',
    );
    byLane('oh_hai_hub_db_lane_held_max', 'The most pool connections a share of the pool held at once, since start', 'lane', SHARES, 'heldMax');
    byLane(
      'oh_hai_hub_db_stream_waited_total',
      "Stream work that had to wait for a pool connection, by work (page: a push to open streams; connect: a stream's credential and renewal)",
      'work',
      STREAM_WORK,
      'waited',
    );
    byLane(
      'oh_hai_hub_db_stream_waiting_max',
      'The most stream work of a kind (page, connect) waiting for a pool connection at once, since start',
      'work',
      STREAM_WORK,
      'waitingMax',
    );
    total(
      'oh_hai_hub_db_pages_before_connects_total',
      'Pool connections handed to a waiting stream page while a stream connect waited too (pages go first, a few in a row at most)',
      (l) => l.pagesBeforeConnects,
    );
    total(
      'oh_hai_hub_db_stream_before_requests_total',
      'Pool connections handed to waiting stream work below its share while requests, holding their own share or more, waited too',
      (l) => l.streamBeforeRequests,
    );
    const reported = new Map<string, number>();
    new prom.Counter({
      name: 'oh_hai_hub_db_round_trips_total',
      help: 'Round trips to the database by work (route pattern, push, sweep, presence) and kind (inside a unit, BEGIN and COMMIT included, or a read outside one)',
      labelNames: ['work', 'kind'],
      registers: [registry],
      collect() {
        for (const [work, n] of database.roundTrips()) {
          for (const kind of ['unit', 'read'] as const) {
            const key = `${work}\n${kind}`;
            const delta = n[kind] - (reported.get(key) ?? 0);
            if (delta > 0) this.inc({ work, kind }, delta);
            reported.set(key, n[kind]);
          }
        }
      },
    });
  }

  // Not ready while another instance's migration holds the tables: no migration locks oh_hai_schema, so health()'s
  // read alone answered 200 for an instance whose every request waited on the migration's locks (session 20, lock12).
  const ready = healthWithin(
    database === null
      ? src.store
      : {
          health: async () => {
            const why = await database.migration();
            return why === null ? src.store.health() : { ok: false, reason: why };
          },
        },
    READY_DEADLINE_MS,
    READY_SHARE_MS,
  );
  const server: Server = createServer((req, res) => {
    void (async () => {
      const path = (req.url ?? '/').split('?')[0];
      const reply = (status: number, type: string, body: string) => {
        res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store' });
        res.end(body);
      };
      if (req.method !== 'GET') return reply(405, 'application/json', JSON.stringify({ ok: false, reason: 'GET only' }));
      if (path === '/healthz') return reply(200, 'application/json', JSON.stringify({ ok: true }));
      if (path === '/readyz') {
        const h = await ready();
        return reply(
          h.ok ? 200 : 503,
          'application/json',
          JSON.stringify(h.ok ? { ok: true, store: src.store.kind } : { ok: false, store: src.store.kind, reason: h.reason }),
        );
      }
      if (path === '/metrics') return reply(200, registry.contentType, await registry.metrics());
      return reply(404, 'application/json', JSON.stringify({ ok: false, reason: 'the admin port serves /healthz, /readyz and /metrics' }));
    })().catch(() => res.destroy());
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(listen.port, listen.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: reachableUrl(listen.host, port),
    metrics: {
      request: (route, status) => requests.inc({ route, status: String(status) }),
      sent: () => sends.inc(),
      pushed: (ms) => push.observe(Math.max(0, ms) / 1000),
      pagesRead: (n) => pagesPerRead.observe(n),
      lapsed: (n) => lapsed.inc(n),
      operatorStop: () => stops.inc(),
      notified: (ms) => lag.observe(Math.max(0, ms) / 1000),
      retried: (code) => retries.inc({ code }),
      backgroundFailed: (work) => backgroundFailures.inc({ work }),
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
