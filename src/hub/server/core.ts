import type { IncomingMessage } from 'node:http';
import type { Clock } from '../../util/clock.js';
import type { Authenticated } from './auth.js';
import type { Bus } from './bus.js';
import type { CredentialCache } from './credentials.js';
import type { HubConfig } from './config.js';
import type { FaultTable } from './faults.js';
import type { FailureLog } from './failure-log.js';
import type { StreamRegistry } from './registry.js';
import type { StreamEnds } from './seen.js';
import type { HubMetrics } from './metrics.js';
import type { Store } from './sql.js';
import type { TurnBudget } from './turns.js';

/** One answered request, for the access log: the route's pattern, never a token or a query. */
export interface AccessRecord {
  method: string;
  route: string;
  status: number;
  ms: number;
  /** The client: the peer, or behind a `--trust-proxy` proxy the address it forwarded. */
  client: string | null;
  /** The peer (the balancer, behind one). */
  remote: string | null;
  /** X-Forwarded-For as it arrived, verbatim (believed only from a trusted proxy: see `client`). */
  forwardedFor: string | null;
}

/** The account a reference Hub serves (one per data dir). */
export interface Account {
  id: string;
  label: string;
}

/** Everything the Hub's services share; built once per server. */
export interface HubCore {
  /** Every request that writes runs its unit in `store.write` and answers after it commits. */
  store: Store;
  config: HubConfig;
  /**
   * The Hub's clock (+ --clock-offset-ms). On a shared store it follows the database's
   * clock; decisions inside a unit take `tx.now`, the database's own instant.
   */
  clock: Clock;
  bus: Bus;
  streams: StreamRegistry;
  /** Streams' ends, written in batches (their sessions and holders were seen until then). */
  ends: StreamEnds;
  /** Every stream's pushes, logged when they start failing and when they work again (not once a push). */
  pushes: FailureLog;
  faults: FaultTable;
  account: Account;
  /** Tokens let in lately, by hash (OH_HAI_HUB_CREDENTIAL_CACHE_MS; forgotten on any credential change). */
  credentials: CredentialCache<Authenticated>;
  /** Agent ids by token hash, from MA2H_AGENT_TOKENS. */
  configAgents: Map<string, string>;
  /** One line per event the operator should see; never a secret. */
  log: (line: string) => void;
  /** One record per request answered (`--log-format json`); null = no access log. */
  access: ((r: AccessRecord) => void) | null;
  metrics: HubMetrics;
  /** Whose request it is, for logs and rate limits (`--trust-proxy`: src/hub/server/client-address.ts). */
  clientAddress: (req: IncomingMessage) => string | null;
  /** Stream pages' share of each turn of the event loop, in bytes (`--page-bytes` a turn). */
  turns: TurnBudget;
  /** Drains and message watches held open on this instance now, by what they wait on (/metrics). */
  held: HeldRequests;
}

export type HeldRequests = Record<'mail' | 'message', number>;
