import { MAX_PAGE_BYTES } from '../contract/index.js';
import type { DatabaseUrl } from './postgres/url.js';
import type { SqliteDriverChoice } from './sqlite-driver.js';

/**
 * Everything a reference Hub runs with (MA2H §11 knobs). Durations are seconds and may be
 * fractional: test Hubs use sub-second holds and leases below the production floor.
 */
export interface HubConfig {
  host: string;
  /** 0 = an ephemeral port. */
  port: number;
  dataDir: string;
  /** HMAC key for delivery signatures (UTF-8 bytes of this string). */
  signingKey: string;
  leaseMinSeconds: number;
  leaseDefaultSeconds: number;
  leaseMaxSeconds: number;
  streamMaxHoldSeconds: number;
  keepaliveSeconds: number;
  /** Long-poll clamp as configured; the advertised value is {@link effectiveMaxWaitSeconds}. */
  maxWaitSeconds: number;
  presenceSeconds: number;
  messageTtlSeconds: number;
  replayWindowSeconds: number;
  /** A holder seen within this long blocks another home (409 session_held). */
  holderStaleSeconds: number;
  /** The Hub's clock = real clock + this, so a test can make the two clocks disagree. */
  clockOffsetMs: number;
  /** Enables `POST /v1/_faults`; without it the route does not exist. */
  faultInjection: boolean;
  /** The SQLite engine under the store (absent = auto: node:sqlite where this Node has it, else better-sqlite3). */
  sqliteDriver?: SqliteDriverChoice;
  /**
   * Advertise `account.agent_directory` and serve it to agent tokens (absent = on). Off
   * plays a Hub without the 0.12.2 directory: humans only, so setup/upgrade write no policy.
   */
  agentDirectory?: boolean;
  /** Identities from the configured token store (`MA2H_AGENT_TOKENS`). */
  configTokens: ConfigToken[];
  maxBodyBytes: number;
  /**
   * Bytes of deliveries one `entries` event or drain answer carries at most; a page always
   * carries one entry, so the largest legal entry still moves (docs/protocol.md, byte bounds).
   */
  pageBytes: number;
  /** A stream whose reader takes no bytes for this long while a write waits is dropped (slow reader). */
  streamWriteTimeoutSeconds: number;
  /**
   * Open client connections at most; at the cap an idle one is shed for a new one, and with none
   * idle the new one is refused. Null: the fd limit (RLIMIT_NOFILE) less a reserve.
   */
  maxConnections: number | null;
  /** Reported in the capability document. */
  version: string;
  /** The shared PostgreSQL store (`--database` / OH_HAI_HUB_DATABASE_URL); null = SQLite in `dataDir`. */
  database: DatabaseUrl | null;
  /** Connections one instance may hold on the database (besides its listener and its notifier); OH_HAI_HUB_DB_POOL_MAX. */
  databasePoolMax: number;
  /** How long a dropped database listener (or notifier) waits before it is re-opened; OH_HAI_HUB_LISTEN_RETRY_MS. */
  listenRetryMs: number;
  /** How long a token's check is remembered (0: never); OH_HAI_HUB_CREDENTIAL_CACHE_MS (credentials.ts). */
  credentialCacheMs: number;
  /** How long a stopping Hub waits for its streams' last events; OH_HAI_HUB_SHUTDOWN_STREAMS_MS. */
  shutdownStreamsMs: number;
  /** How long it then waits for the work under way; OH_HAI_HUB_SHUTDOWN_WORK_MS. */
  shutdownWorkMs: number;
}

export interface ConfigToken {
  agentId: string;
  token: string;
}

export const HUB_DEFAULTS = {
  host: '127.0.0.1',
  /** `oh-hai hub serve` listens here unless told otherwise, so a Hub keeps its URL across restarts. */
  port: 8417,
  leaseMinSeconds: 60,
  leaseDefaultSeconds: 900,
  leaseMaxSeconds: 3600,
  streamMaxHoldSeconds: 30,
  keepaliveSeconds: 15,
  maxWaitSeconds: 25,
  presenceSeconds: 90,
  messageTtlSeconds: 7 * 24 * 3600,
  replayWindowSeconds: 120,
  holderStaleSeconds: 60,
  clockOffsetMs: 0,
  maxBodyBytes: 1024 * 1024,
  pageBytes: 1024 * 1024,
  streamWriteTimeoutSeconds: 10,
  maxLivePerAgent: 16,
  databasePoolMax: 10,
  listenRetryMs: 500,
  credentialCacheMs: 1000,
  shutdownStreamsMs: 2000,
  shutdownWorkMs: 5000,
} as const;

/** A config with every knob at its default; `dataDir`, `signingKey` and `version` have none. */
export function defaultHubConfig(required: Pick<HubConfig, 'dataDir' | 'signingKey' | 'version'>): HubConfig {
  const d = HUB_DEFAULTS;
  return {
    host: d.host,
    port: d.port,
    leaseMinSeconds: d.leaseMinSeconds,
    leaseDefaultSeconds: d.leaseDefaultSeconds,
    leaseMaxSeconds: d.leaseMaxSeconds,
    streamMaxHoldSeconds: d.streamMaxHoldSeconds,
    keepaliveSeconds: d.keepaliveSeconds,
    maxWaitSeconds: d.maxWaitSeconds,
    presenceSeconds: d.presenceSeconds,
    messageTtlSeconds: d.messageTtlSeconds,
    replayWindowSeconds: d.replayWindowSeconds,
    holderStaleSeconds: d.holderStaleSeconds,
    clockOffsetMs: d.clockOffsetMs,
    maxBodyBytes: d.maxBodyBytes,
    pageBytes: d.pageBytes,
    streamWriteTimeoutSeconds: d.streamWriteTimeoutSeconds,
    maxConnections: null,
    faultInjection: false,
    configTokens: [],
    database: null,
    databasePoolMax: d.databasePoolMax,
    listenRetryMs: d.listenRetryMs,
    credentialCacheMs: d.credentialCacheMs,
    shutdownStreamsMs: d.shutdownStreamsMs,
    shutdownWorkMs: d.shutdownWorkMs,
    ...required,
  };
}

/** The hard ceiling on a held long-poll: a load balancer's 60 s idle timeout (MA2H §4). */
const WAIT_CEILING_SECONDS = 60;

/** Never above 60 s or the presence window, so a held drain is never severed nor leaves presence stale. */
export function effectiveMaxWaitSeconds(c: HubConfig): number {
  return Math.max(0, Math.min(c.maxWaitSeconds, WAIT_CEILING_SECONDS, c.presenceSeconds));
}

/** Clamp a requested lease to the advertised bounds; absent → the default. */
export function clampLease(c: HubConfig, requested: number | undefined): number {
  const v = requested ?? c.leaseDefaultSeconds;
  return Math.min(c.leaseMaxSeconds, Math.max(c.leaseMinSeconds, v));
}

/** MA2H §12: hold = min(stream_max_hold, lease − min(1 s, lease/4)), so a reconnect always renews in time. */
export function holdMs(c: HubConfig, leaseSeconds: number): number {
  const leaseMs = leaseSeconds * 1000;
  return Math.max(0, Math.min(c.streamMaxHoldSeconds * 1000, leaseMs - Math.min(1000, leaseMs / 4)));
}

/** Reject knob combinations that cannot describe a working Hub, naming the flag to fix. */
export function checkConfig(c: HubConfig): string | null {
  const positive: Array<[string, number]> = [
    ['--lease-min-seconds', c.leaseMinSeconds],
    ['--lease-default-seconds', c.leaseDefaultSeconds],
    ['--lease-max-seconds', c.leaseMaxSeconds],
    ['--stream-max-hold-seconds', c.streamMaxHoldSeconds],
    ['--keepalive-seconds', c.keepaliveSeconds],
    ['--presence-seconds', c.presenceSeconds],
    ['--message-ttl-seconds', c.messageTtlSeconds],
    ['--replay-window-seconds', c.replayWindowSeconds],
    ['--holder-stale-seconds', c.holderStaleSeconds],
    ['--stream-write-timeout-seconds', c.streamWriteTimeoutSeconds],
  ];
  for (const [flag, v] of positive) if (!(v > 0) || !Number.isFinite(v)) return `${flag} must be a number above 0 (got ${v})`;
  if (!(c.maxWaitSeconds >= 0)) return `--max-wait-seconds must be a number ≥ 0 (got ${c.maxWaitSeconds})`;
  if (c.leaseMinSeconds > c.leaseMaxSeconds) return `--lease-min-seconds (${c.leaseMinSeconds}) is above --lease-max-seconds (${c.leaseMaxSeconds})`;
  if (c.leaseDefaultSeconds < c.leaseMinSeconds || c.leaseDefaultSeconds > c.leaseMaxSeconds) {
    return `--lease-default-seconds (${c.leaseDefaultSeconds}) must lie between --lease-min-seconds (${c.leaseMinSeconds}) and --lease-max-seconds (${c.leaseMaxSeconds})`;
  }
  if (!Number.isInteger(c.pageBytes) || c.pageBytes < 1 || c.pageBytes > MAX_PAGE_BYTES) {
    return `--page-bytes must be a whole number of bytes from 1 to ${MAX_PAGE_BYTES} (what every MA2H client accepts; got ${c.pageBytes})`;
  }
  if (c.maxConnections !== null && (!Number.isInteger(c.maxConnections) || c.maxConnections < 1)) {
    return `--max-connections must be a whole number above 0 (got ${c.maxConnections})`;
  }
  if (!Number.isInteger(c.port) || c.port < 0 || c.port > 65535) return `--port must be an integer 0–65535 (got ${c.port})`;
  if (c.signingKey.length === 0) return '--signing-key / MA2H_SIGNING_KEY must not be empty';
  return null;
}
