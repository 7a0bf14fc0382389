import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { Clock } from '../../util/clock.js';
import { writeFileAtomic } from '../../util/fs-durable.js';
import { bootAccount } from './account.js';
import { Bus } from './bus.js';
import { GroupCommit } from './commit.js';
import type { HubConfig } from './config.js';
import type { HubCore } from './core.js';
import { Signer } from './delivery.js';
import { FaultTable } from './faults.js';
import { HUB_RECORD_FILE } from './files.js';
import { hashToken, hubClock, iso } from './ids.js';
import { sweepExpired } from './inbox.js';
import { StreamRegistry } from './registry.js';
import { createRouter, type ExtraRoutes } from './router.js';
import { apiRoutes } from './routes.js';
import { sweepLapsed } from './sessions.js';
import { openStore } from './store.js';

/** What `hub.json` in the data dir records, so admin commands find a running Hub. */
export interface HubRecord {
  url: string;
  pid: number;
  started_at: string;
}

export interface HubServerOptions {
  config: HubConfig;
  /** Our real clock; the Hub's clock is this plus `config.clockOffsetMs`. */
  clock: Clock;
  /** Recorded in hub.json. */
  pid: number;
  /** One line per event the operator should see (internal errors); never a secret. */
  log: (line: string) => void;
  /** Paths outside the API (the web inbox), tried before the 404. */
  extraRoutes?: ExtraRoutes;
}

export interface HubServer {
  url: string;
  port: number;
  dataDir: string;
  accountId: string;
  /** True when this start created the account and its human token. */
  createdAccount: boolean;
  humanTokenPath: string;
  /** The services, for an embedding that needs more than HTTP (tests, the web inbox). */
  core: HubCore;
  /** Stop accepting, end open streams with `reconnect {"reason":"shutdown"}`, close the store. */
  close(): Promise<void>;
}

/** How long a stopping Hub waits for its open streams to take their last event. */
const SHUTDOWN_WRITE_MS = 2000;

const formatUrl = (host: string, port: number): string => `http://${host.includes(':') ? `[${host}]` : host}:${port}`;

/** Start a reference Hub on `config.host:config.port` with its store in `config.dataDir`. */
export async function createHubServer(o: HubServerOptions): Promise<HubServer> {
  const { config } = o;
  const db = openStore(config.dataDir);
  const boot = bootAccount(db, config.dataDir, 'reference hub account');
  const bus = new Bus();
  const core: HubCore = {
    db,
    commits: new GroupCommit(db, {
      committed: () => bus.deliver(),
      effectFailed: (e) => o.log(`hub: after-commit effect failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`),
    }),
    config,
    clock: hubClock(o.clock, config.clockOffsetMs),
    bus,
    streams: new StreamRegistry(),
    faults: new FaultTable(),
    account: boot.account,
    configAgents: new Map(config.configTokens.map((t) => [hashToken(t.token), t.agentId])),
  };
  const dispatch = createRouter(core, apiRoutes(core, new Signer(core)), o.extraRoutes ?? null, o.log);
  const server: Server = createServer((req, res) => void dispatch(req, res));
  // Held streams and long-polls answer slowly by design; only the request itself is timed.
  server.requestTimeout = 60_000;
  server.keepAliveTimeout = 10_000;

  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(config.port, config.host, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (e) {
    db.close();
    throw e;
  }
  const port = (server.address() as AddressInfo).port;
  const url = formatUrl(config.host, port);
  const record: HubRecord = { url, pid: o.pid, started_at: iso(o.clock.now()) };
  writeFileAtomic(path.join(config.dataDir, HUB_RECORD_FILE), JSON.stringify(record, null, 2) + '\n', 0o600);

  // Leases and TTLs are stored instants; the sweep only notices that one has passed.
  const sweepMs = Math.max(20, Math.min(1000, (config.leaseMinSeconds * 1000) / 4));
  const sweep = () => {
    try {
      sweepLapsed(core);
      sweepExpired(core);
    } catch (e) {
      o.log(`hub: sweep failed: ${e instanceof Error ? e.message : String(e)}`);
    }
  };
  sweep();
  const sweeper = setInterval(sweep, sweepMs);

  let closing: Promise<void> | null = null;
  return {
    url,
    port,
    dataDir: config.dataDir,
    accountId: boot.account.id,
    createdAccount: boot.created,
    humanTokenPath: boot.humanTokenPath,
    core,
    close() {
      closing ??= (async () => {
        clearInterval(sweeper);
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        // A client that reads nothing could hold a stream's last write forever: the wait is bounded.
        let bound: NodeJS.Timeout | undefined;
        await Promise.race([core.streams.shutdownAll(), new Promise<void>((resolve) => (bound = setTimeout(resolve, SHUTDOWN_WRITE_MS)))]);
        clearTimeout(bound);
        server.closeAllConnections();
        await closed;
        db.close();
      })();
      return closing;
    },
  };
}
