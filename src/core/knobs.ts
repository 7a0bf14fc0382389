import { type Coded, done, usageFailure } from './coded.js';

/**
 * The knob registry: every `OH_HAI_*` interval, bound and size the product reads, in one
 * table. The code reads values through `readKnobs`, the man pages print `knobText` and the
 * defaults from here, and test/docs/knobs.test.ts holds docs/internals.md's table to it.
 * Adding a knob is one entry below (plus its reader naming it in `readKnobs`).
 *
 * A value that is not a number in range is exit 2 (`invalid_setting`) naming the variable,
 * what it must be and its default, everywhere: nothing falls back silently.
 */

export type KnobUnit = 'seconds' | 'milliseconds' | 'count' | 'bytes';

export interface KnobSpec {
  /** The environment variable. */
  env: string;
  unit: KnobUnit;
  /** null: no default of ours (the value comes from elsewhere unless set, e.g. the Hub's). */
  default: number | null;
  /** The lowest value allowed; `above: true` makes it exclusive (the value must be greater). */
  min: number;
  above: boolean;
  /** A sentence appended to the range refusal when the bare bound does not explain itself. */
  why?: string;
  /** The highest value allowed, where there is one, and what its refusal adds. */
  max?: { value: number; why: string };
  /** Another knob (its registry name) this one may not be below: the backoff cap and its floor. */
  notBelow?: string;
  /** The `[bridge]` key and flag that set the same value, where they exist (flag > env > file > default); `flag` null: no command takes one. */
  setting?: { key: string; flag: string | null };
  /** The commands that read it, as a person types them. */
  readBy: readonly string[];
  /** One sentence for the man pages and docs: what it bounds. */
  what: string;
}

const spec = <T extends Record<string, KnobSpec>>(t: T): T => t;

/** Every command that checks CONNECTION_KNOBS (below) before it runs. */
const CONNECTED = ['bridge', 'inbox watch', '__consumer', 'doctor', 'send', 'ask', 'task', 'reply', 'fleet', 'session'] as const;

export const KNOBS = spec({
  waitSeconds: {
    env: 'OH_HAI_WAIT_SECONDS',
    unit: 'seconds',
    default: 540,
    min: 0,
    above: false,
    why: ' (0 prints what is waiting and exits)',
    // A day: far past any harness's task cap, and what a wait given in milliseconds exceeds (docs/bridge.md "Knobs").
    max: { value: 86_400, why: ' (a day); a longer wait is almost always milliseconds given as seconds' },
    setting: { key: 'wait_seconds', flag: '--wait' },
    readBy: ['bridge', 'inbox watch'],
    what: 'The reader\u2019s wait bound when nothing is waiting (0 prints what is waiting and exits; at most 86400, a day).',
  },
  unattendedMaxSeconds: {
    env: 'OH_HAI_UNATTENDED_MAX_SECONDS',
    unit: 'seconds',
    default: 900,
    min: 0,
    above: true,
    why: ': 0 or less never disabled the unattended bound (a connection run under a service manager with --mode direct has none)',
    // No flag: the bound is the machine's policy for an unattended connection, not a per-run choice,
    // and a flag would have to be asserted against a running connection like --allow-from.
    setting: { key: 'unattended_max_seconds', flag: null },
    readBy: ['bridge', 'inbox watch', '__consumer', 'doctor'],
    what: 'A connection oh-hai bridge started stops after this long with no attending reader, leaving the session to lapse. Must be greater than 0: 0 or less never disabled the bound. A connection under a service manager (--mode direct) has none.',
  },
  intervalSeconds: {
    env: 'OH_HAI_INTERVAL_SECONDS',
    unit: 'seconds',
    default: 5,
    min: 0,
    above: true,
    setting: { key: 'interval_seconds', flag: '--interval' },
    readBy: ['bridge', 'inbox watch', '__consumer'],
    what: 'The long-poll interval (the principal drain\u2019s floor).',
  },
  maxRetries: {
    env: 'OH_HAI_MAX_RETRIES',
    unit: 'count',
    default: 8,
    min: 0,
    above: false,
    setting: { key: 'max_retries', flag: '--max-retries' },
    readBy: ['bridge', 'inbox watch', '__consumer', 'send', 'ask', 'task', 'reply'],
    what: 'The reconnect budget for genuine faults (transport errors, 5xx) before exit 13.',
  },
  readerGraceSeconds: {
    env: 'OH_HAI_READER_GRACE_SECONDS',
    unit: 'seconds',
    default: 30,
    min: 0,
    above: false,
    readBy: ['bridge', 'inbox watch'],
    what: 'The reader\u2019s declared deadline is the wait bound plus this; past it the reader no longer counts as attending.',
  },
  heartbeatMs: {
    env: 'OH_HAI_HEARTBEAT_MS',
    unit: 'milliseconds',
    default: 5000,
    min: 0,
    above: true,
    readBy: CONNECTED,
    what: 'Reader and connection heartbeat interval.',
  },
  backoffMinMs: {
    env: 'OH_HAI_BACKOFF_MIN_MS',
    unit: 'milliseconds',
    default: 1000,
    min: 0,
    above: true,
    readBy: CONNECTED,
    what: 'Full-jitter backoff floor for genuine faults.',
  },
  backoffMaxMs: {
    env: 'OH_HAI_BACKOFF_MAX_MS',
    unit: 'milliseconds',
    default: 30_000,
    min: 0,
    above: true,
    notBelow: 'backoffMinMs',
    readBy: CONNECTED,
    what: 'Full-jitter backoff cap. Must be at least the floor.',
  },
  staleHolderSeconds: {
    env: 'OH_HAI_STALE_HOLDER_SECONDS',
    unit: 'seconds',
    default: 60,
    min: 0,
    above: true,
    readBy: CONNECTED,
    what: 'A state record whose heartbeat is older than this is stale: not attendance, judged alike by every process.',
  },
  cursorPollMs: {
    env: 'OH_HAI_CURSOR_POLL_MS',
    unit: 'milliseconds',
    default: 1000,
    min: 0,
    above: true,
    readBy: CONNECTED,
    what: 'How often the connection re-reads the reader\u2019s cursor as a safety net beside file watching.',
  },
  replayWindowSeconds: {
    env: 'OH_HAI_REPLAY_WINDOW_SECONDS',
    unit: 'seconds',
    default: null,
    min: 0,
    above: true,
    readBy: CONNECTED,
    what: 'Overrides the replay window the Hub advertises (else 300 when it advertises none). For tests of the fallback only.',
  },
  logMaxBytes: {
    env: 'OH_HAI_LOG_MAX_BYTES',
    unit: 'bytes',
    default: 1024 * 1024,
    min: 0,
    above: true,
    readBy: ['bridge', 'inbox watch', '__consumer'],
    what: 'The size at which a state entry\u2019s bridge.log is renamed to bridge.log.1 (replacing the previous one) and a new bridge.log begins (1 MiB by default).',
  },
  askPollMs: {
    env: 'OH_HAI_ASK_POLL_MS',
    unit: 'milliseconds',
    default: 2000,
    min: 0,
    above: true,
    readBy: ['ask'],
    what: 'How often ask --wait polls the message.',
  },
  stopWaitMs: {
    env: 'OH_HAI_STOP_WAIT_MS',
    unit: 'milliseconds',
    default: 30_000,
    min: 0,
    above: true,
    readBy: ['session close', 'bridge', 'inbox watch'],
    what: 'How long oh-hai session close waits for the connection\u2019s clean stop after SIGTERM (a standing-down connection gets half of it); also how long a live 0.9 connection gets to stop when its home is adopted.',
  },
  hubDbPoolMax: {
    env: 'OH_HAI_HUB_DB_POOL_MAX',
    unit: 'count',
    default: 10,
    min: 1,
    above: false,
    readBy: ['hub serve'],
    what: 'Connections one Hub instance on PostgreSQL holds at most (its listener\u2019s and notifier\u2019s are extra); N instances hold up to N times this.',
  },
  hubListenRetryMs: {
    env: 'OH_HAI_HUB_LISTEN_RETRY_MS',
    unit: 'milliseconds',
    default: 500,
    min: 0,
    above: false,
    readBy: ['hub serve'],
    what: 'How long a Hub on PostgreSQL waits before re-opening a dropped LISTEN connection (every waiter re-checks its mailbox once it is back).',
  },
  hubCredentialCacheMs: {
    env: 'OH_HAI_HUB_CREDENTIAL_CACHE_MS',
    unit: 'milliseconds',
    default: 1000,
    min: 0,
    above: false,
    readBy: ['hub serve'],
    what: 'How long a Hub remembers a token it let in, so a busy client\u2019s requests skip the credential read (0: never). A revocation or a change of the messaging switch forgets at once on every instance; this bounds what a lost notification can leave in use.',
  },
  hubShutdownStreamsMs: {
    env: 'OH_HAI_HUB_SHUTDOWN_STREAMS_MS',
    unit: 'milliseconds',
    default: 2000,
    min: 0,
    above: false,
    readBy: ['hub serve'],
    what: 'How long a stopping Hub waits for its open streams to take their last event (reconnect, shutdown) before it closes their connections: a client that reads nothing cannot hold the stop longer.',
  },
  hubShutdownWorkMs: {
    env: 'OH_HAI_HUB_SHUTDOWN_WORK_MS',
    unit: 'milliseconds',
    default: 5000,
    min: 0,
    above: false,
    readBy: ['hub serve'],
    what: 'How long a stopping Hub then waits for the requests and background writes under way to finish before it closes its store; what outlives it is refused with a 503.',
  },
  doctorTimeoutSeconds: {
    env: 'OH_HAI_DOCTOR_TIMEOUT_SECONDS',
    unit: 'seconds',
    default: 10,
    min: 0,
    above: true,
    readBy: ['doctor'],
    what: 'Each Hub request\u2019s timeout in oh-hai doctor, and how long the self-test\u2019s drain step waits for its notify.',
  },
});

export type KnobName = keyof typeof KNOBS;

/** The knobs a flag and a `[bridge]` key can also set (the settings chain, src/config/settings.ts). */
export type SettingKnob = { [K in KnobName]: (typeof KNOBS)[K] extends { setting: object } ? K : never }[KnobName];
export const SETTING_KNOBS = (Object.keys(KNOBS) as KnobName[]).filter((k): k is SettingKnob => 'setting' in KNOBS[k]);
export const settingOf = (k: SettingKnob): { key: string; flag: string | null } => KNOBS[k].setting;
/** The setting knobs some command takes a flag for: only these can have a value from a flag. */
export type FlaggedKnob = { [K in SettingKnob]: (typeof KNOBS)[K]['setting']['flag'] extends null ? never : K }[SettingKnob];

/**
 * The knobs every process that judges a heartbeat or a `t`, or backs off from the Hub, reads
 * alike (the consumer, and the reader, doctor and the sending side beside it): a bad value
 * of any of them refuses each of those commands, never only the one that happens to use it.
 */
export const CONNECTION_KNOBS = ['heartbeatMs', 'backoffMinMs', 'backoffMaxMs', 'staleHolderSeconds', 'cursorPollMs', 'replayWindowSeconds'] as const;

/** What a knob's value is; null only for a knob with no default that is unset. */
export type KnobValue<K extends KnobName> = (typeof KNOBS)[K]['default'] extends number ? number : number | null;
export type KnobValues<K extends KnobName> = { [P in K]: KnobValue<P> };

const EXPECTED: Record<KnobUnit, string> = {
  seconds: 'a number of seconds (fractions allowed)',
  milliseconds: 'a number of milliseconds',
  count: 'a whole number',
  bytes: 'a number of bytes',
};

const UNIT_WORD: Record<KnobUnit, string> = { seconds: 'seconds', milliseconds: 'milliseconds', count: '', bytes: 'bytes' };

const DECIMAL = /^[+-]?(\d+(\.\d*)?|\.\d+)$/u;

/** How a refused value is named back: TOML values keep their type, text is quoted. */
export const describeValue = (v: unknown): string => {
  if (typeof v === 'string') return `the string ${JSON.stringify(v)}`;
  if (Array.isArray(v)) return `a list of ${v.length}`;
  if (v !== null && typeof v === 'object') return 'a table';
  return String(v);
};

/** What the knob must be, as the refusals and the config page say it. */
export const knobExpected = (name: KnobName): string => EXPECTED[KNOBS[name].unit];

/**
 * Check one value of a knob. `where` names its source (`OH_HAI_WAIT_SECONDS`, `--wait`,
 * `<file>: [bridge] wait_seconds`); text (a flag or a variable) is parsed as a decimal.
 */
export function checkKnob(name: KnobName, value: unknown, where: string): Coded<number> {
  const k: KnobSpec = KNOBS[name];
  const n = typeof value === 'string' && DECIMAL.test(value.trim()) ? Number(value.trim()) : value;
  if (typeof n !== 'number' || !Number.isFinite(n) || (k.unit === 'count' && !Number.isInteger(n))) {
    const fallback = k.default === null ? 'unset it' : `unset it for the default (${k.default})`;
    const source = where === k.env ? `; ${fallback}` : '';
    return usageFailure('invalid_setting', `${where} must be ${EXPECTED[k.unit]}, got ${describeValue(value)}${source}`);
  }
  if (k.above ? n <= k.min : n < k.min) {
    const bound = k.above ? `it must be greater than ${k.min}` : k.min === 0 ? 'it cannot be negative' : `it must be at least ${k.min}`;
    return usageFailure('invalid_setting', `${where} is ${n}: ${bound}${k.why ?? ''}`);
  }
  if (k.max !== undefined && n > k.max.value) return usageFailure('invalid_setting', `${where} is ${n}: it must be at most ${k.max.value}${k.max.why}`);
  return done(n);
}

/** One knob from the environment: its checked value, else its default. */
export function knobFromEnv<K extends KnobName>(env: NodeJS.ProcessEnv, name: K): Coded<KnobValue<K>> {
  const k: KnobSpec = KNOBS[name];
  const raw = env[k.env];
  // Set means set: a blank value is refused like any other that is not a number, never read as unset.
  if (raw === undefined) return done(k.default as KnobValue<K>);
  return checkKnob(name, raw, k.env) as Coded<KnobValue<K>>;
}

/** Several knobs from the environment, each checked, and each `notBelow` relation among them. */
export function readKnobs<K extends KnobName>(env: NodeJS.ProcessEnv, names: readonly K[]): Coded<KnobValues<K>> {
  const values = {} as Record<KnobName, number | null>;
  for (const name of names) {
    const v = knobFromEnv(env, name);
    if (!v.ok) return v;
    values[name] = v.value;
  }
  for (const name of names) {
    const floor = names.find((n) => n === (KNOBS[name] as KnobSpec).notBelow);
    const [v, f] = [values[name], floor === undefined ? null : values[floor]];
    if (floor !== undefined && v != null && f != null && v < f) {
      return usageFailure('invalid_setting', `${KNOBS[name].env} (${v}) is below ${KNOBS[floor].env} (${f}); the cap must be at least the floor`);
    }
  }
  return done(values as KnobValues<K>);
}

/** A knob's line for a man page's ENVIRONMENT or the config page: what it bounds, its unit and default. */
export function knobText(name: KnobName): string {
  const k: KnobSpec = KNOBS[name];
  const unit = UNIT_WORD[k.unit];
  const setting = k.setting ? ` Also ${k.setting.flag === null ? '' : `${k.setting.flag} and `}[bridge] ${k.setting.key}.` : '';
  if (k.default === null) return `${k.what}${unit ? ` In ${unit}.` : ''}${setting}`;
  return `${k.what} ${unit ? `In ${unit}; default` : 'Default'} ${k.default}.${setting} Anything else is a usage error (exit 2).`;
}
