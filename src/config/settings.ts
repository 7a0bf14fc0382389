import { checkKnob, type Coded, done, type FlaggedKnob, KNOBS, SETTING_KNOBS, type SettingKnob, usageFailure } from '../core/index.js';
import { environmentCredential } from './credentials.js';
import { parseHubUrl, plainHttpWarning } from './hub-url.js';
import { type Transport, checkTransport } from './transport.js';
import type { LoadedConfig } from './load.js';
import { type Policy, parsePolicy, policyItems } from './policy.js';
import { DEFAULT_RETAIN_PRINTED, RETAIN_PRINTED_ENV, parseRetainPrinted, type RetainPrinted } from './retention.js';

/** Flag values as commander hands them over (text), undefined when not given. */
export interface SettingsFlags {
  hub?: string;
  allowFrom?: readonly string[];
  wait?: string | number;
  transport?: string;
  interval?: string | number;
  maxRetries?: string | number;
}

export type SettingSource = 'flag' | 'env' | 'user' | 'default';

/**
 * Where each bridge setting came from. A knob no command takes a flag for
 * (unattended_max_seconds) never came from one, and its type says so: a reader of the source
 * (doctor) has no 'flag' case to word.
 */
export type SettingSources = Record<FlaggedKnob | 'transport', SettingSource> & Record<Exclude<SettingKnob, FlaggedKnob>, Exclude<SettingSource, 'flag'>>;

export interface BridgeSettings {
  /** Canonical items (sorted, deduplicated); null = none declared (fail-closed). */
  allowFrom: string[] | null;
  allowFromSource: 'flag' | 'user' | 'none';
  policy: Policy | null;
  waitSeconds: number;
  unattendedMaxSeconds: number;
  transport: Transport;
  intervalSeconds: number;
  maxRetries: number;
  /** How long printed and acknowledged records stay in the spool. */
  retainPrinted: RetainPrinted;
}

export interface ResolvedSettings {
  /** The Hub origin, or null when nothing names one (see `requireHubUrl`). */
  hubUrl: string | null;
  hubUrlSource: 'flag' | 'env' | 'project' | 'user' | 'none';
  bridge: BridgeSettings;
  /** Where each bridge setting came from, for `doctor`. */
  sources: SettingSources;
  /** The loaded files' warnings plus any found here; for the caller to print. */
  warnings: string[];
}

/** The flag's value, for each knob a command takes a flag for (KNOBS[k].setting.flag). */
const FLAG_VALUE: Record<FlaggedKnob, (f: SettingsFlags) => string | number | undefined> = {
  waitSeconds: (f) => f.wait,
  intervalSeconds: (f) => f.interval,
  maxRetries: (f) => f.maxRetries,
};

const present = (v: string | undefined): v is string => v !== undefined && v !== '';
const flagged = (k: SettingKnob): k is FlaggedKnob => Object.hasOwn(FLAG_VALUE, k);

/** Precedence for every setting: flag > environment > project > user > default. */
export function resolveSettings({ flags, env, loaded }: { flags: SettingsFlags; env: NodeJS.ProcessEnv; loaded: LoadedConfig }): Coded<ResolvedSettings> {
  const project = loaded.project?.settings;
  const user = loaded.user.settings;
  const warnings = [...loaded.warnings];

  let hubUrl: string | null = null;
  let hubUrlSource: ResolvedSettings['hubUrlSource'] = 'none';
  if (flags.hub !== undefined) {
    const parsed = parseHubUrl(flags.hub, '--hub');
    if (!parsed.ok) return parsed;
    [hubUrl, hubUrlSource] = [parsed.value, 'flag'];
  } else if (present(env.MA2H_HUB_URL)) {
    const parsed = parseHubUrl(env.MA2H_HUB_URL, 'MA2H_HUB_URL');
    if (!parsed.ok) return parsed;
    [hubUrl, hubUrlSource] = [parsed.value, 'env'];
  } else if (project?.hubUrl !== undefined) [hubUrl, hubUrlSource] = [project.hubUrl, 'project'];
  else if (user.hubUrl !== undefined) [hubUrl, hubUrlSource] = [user.hubUrl, 'user'];
  // A repository must not widen who may ask your agent (product doc), nor choose where its
  // credential goes: a token from the environment is not keyed by Hub, so it is never sent to
  // a Hub that only a project file names. Naming the Hub outside the repository confirms it.
  if (hubUrlSource === 'project' && user.hubUrl !== hubUrl) {
    const envToken = environmentCredential(env);
    if (envToken !== null) return projectHubRefused(hubUrl!, envToken, loaded);
    if (user.hubUrl !== undefined)
      warnings.push(
        `the Hub URL ${hubUrl} comes from ${loaded.project?.path}, overriding ${user.hubUrl} from ${loaded.user.path}; only a token stored for that Hub (oh-hai login) is sent there`,
      );
  }
  const httpWarning = hubUrl === null ? null : plainHttpWarning(hubUrl);
  if (httpWarning) warnings.push(httpWarning);

  // A project file never carries [bridge] (refused at load), so below the environment every
  // bridge setting is the user's.
  let policy: Policy | null = null;
  let allowFromSource: BridgeSettings['allowFromSource'] = 'none';
  if (flags.allowFrom !== undefined && flags.allowFrom.length > 0) {
    const parsed = parsePolicy(flags.allowFrom);
    if (!parsed.ok) return usageFailure('invalid_policy', `--allow-from ${parsed.reason}`);
    [policy, allowFromSource] = [parsed.value, 'flag'];
  } else if (user.allowFrom !== undefined) {
    const parsed = parsePolicy(user.allowFrom);
    if (!parsed.ok) return usageFailure('invalid_policy', `${loaded.user.path}: [bridge] allow_from ${parsed.reason}`);
    [policy, allowFromSource] = [parsed.value, 'user'];
  }

  const sources = {} as ResolvedSettings['sources'];
  const numbers = {} as Record<SettingKnob, number>;
  for (const knob of SETTING_KNOBS) {
    const flagValue = flagged(knob) ? FLAG_VALUE[knob](flags) : undefined;
    const envName = KNOBS[knob].env;
    const envValue = env[envName];
    let value: Coded<number>;
    if (flagged(knob) && flagValue !== undefined) [value, sources[knob]] = [checkKnob(knob, flagValue, KNOBS[knob].setting.flag), 'flag'];
    else if (present(envValue)) [value, sources[knob]] = [checkKnob(knob, envValue, envName), 'env'];
    else if (user.numbers[knob] !== undefined) [value, sources[knob]] = [done(user.numbers[knob]), 'user'];
    else [value, sources[knob]] = [done(KNOBS[knob].default), 'default'];
    if (!value.ok) return value;
    numbers[knob] = value.value;
  }

  let transport: Transport = 'auto';
  sources.transport = 'default';
  if (flags.transport !== undefined) {
    const t = checkTransport(flags.transport, '--transport');
    if (!t.ok) return t;
    [transport, sources.transport] = [t.value, 'flag'];
  } else if (user.transport !== undefined) [transport, sources.transport] = [user.transport, 'user'];

  let retainPrinted = user.retainPrinted ?? DEFAULT_RETAIN_PRINTED;
  if (present(env[RETAIN_PRINTED_ENV])) {
    const r = parseRetainPrinted(env[RETAIN_PRINTED_ENV], RETAIN_PRINTED_ENV);
    if (!r.ok) return r;
    retainPrinted = r.value;
  }

  return done({
    hubUrl,
    hubUrlSource,
    bridge: {
      allowFrom: policy === null ? null : policyItems(policy),
      allowFromSource,
      policy,
      transport,
      retainPrinted,
      ...numbers,
    },
    sources,
    warnings,
  });
}

function projectHubRefused(hubUrl: string, envToken: string, loaded: LoadedConfig): Coded<never> {
  return usageFailure(
    'project_hub_unconfirmed',
    `${loaded.project?.path} points oh-hai at the Hub ${hubUrl}, which nothing outside that repository names, and the token in ${envToken} ` +
      `is not tied to any Hub, so it is not sent to a Hub a repository chose. If you trust that Hub, name it yourself: ` +
      `export MA2H_HUB_URL=${hubUrl}, pass --hub ${hubUrl}, or set [hub] url = "${hubUrl}" in ${loaded.user.path}`,
  );
}

/** The Hub URL, or a usage error (exit 2) that names the three ways to give one. */
export function requireHubUrl(settings: Pick<ResolvedSettings, 'hubUrl'>): Coded<string> {
  if (settings.hubUrl !== null) return done(settings.hubUrl);
  return usageFailure(
    'no_hub_url',
    'no Hub URL is configured: pass --hub <url>, export MA2H_HUB_URL=<url>, or run `oh-hai setup --hub <url>` to write [hub] url into your user config',
  );
}
