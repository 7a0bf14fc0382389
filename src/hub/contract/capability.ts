import { fail, type Result } from '../../core/index.js';
import { bad, describe, guard, isObj, obj, optInstant, optPositive, optStr, str, type Obj } from '../../util/shape.js';
import { SIGNATURE_ALG } from './signature.js';
import type { Capability } from './types.js';

export const MIN_VERSION = '0.5.0';
/** MA2H §1: a Hub that advertises no replay window gets this one. */
export const DEFAULT_REPLAY_WINDOW_SECONDS = 300;

export interface Semver {
  major: number;
  minor: number;
  patch: number;
  prerelease: string | null;
}

const SEMVER = /^(0|[1-9]\d*)\.(0|[1-9]\d*)(?:\.(0|[1-9]\d*))?(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$/;

/** Semver, with a two-part `0.5` read as `0.5.0`. */
export function parseVersion(v: string): Result<Semver> {
  const m = SEMVER.exec(v);
  if (!m) return fail(`version ${describe(v)} is not a semantic version like 0.5.0`);
  return { ok: true, value: { major: Number(m[1]), minor: Number(m[2]), patch: Number(m[3] ?? 0), prerelease: m[4] ?? null } };
}

/** Negative when a < b. A pre-release sorts before its release; pre-releases compare as strings. */
export function compareVersions(a: Semver, b: Semver): number {
  for (const k of ['major', 'minor', 'patch'] as const) {
    if (a[k] !== b[k]) return a[k] - b[k];
  }
  if (a.prerelease === b.prerelease) return 0;
  if (a.prerelease === null) return 1;
  if (b.prerelease === null) return -1;
  return a.prerelease < b.prerelease ? -1 : 1;
}

const MIN: Semver = { major: 0, minor: 5, patch: 0, prerelease: null };

/**
 * MA2H §1 client rules: protocol MA2H, version ≥ 0.5 (semver), inbound.session_param
 * true — a pre-0.5 Hub ignores ?session= and would hand over the whole principal mailbox.
 */
export function checkCapability(x: unknown): Result<Capability> {
  return guard('capability document', () => readCapability(obj(x, 'the body')));
}

function readCapability(c: Obj): Capability {
  const protocol = str(c, 'protocol', 'it');
  if (protocol !== 'MA2H') bad(`protocol is ${describe(protocol)}, not MA2H; this Hub does not speak the protocol oh-hai needs`);
  const version = str(c, 'version', 'it');
  const parsed = parseVersion(version);
  if (!parsed.ok) bad(parsed.reason);
  if (compareVersions(parsed.value, MIN) < 0) {
    bad(`the Hub speaks MA2H ${version}; oh-hai needs ${MIN_VERSION} or later (sessions, ?session=)`);
  }
  const inbound = obj(c.inbound, "field 'inbound'");
  if (inbound.session_param !== true) {
    bad('inbound.session_param is not true: the Hub would ignore ?session= and hand over the whole principal mailbox, so oh-hai refuses it');
  }
  const streamUrl = optStr(inbound, 'stream_url', 'inbound');
  if (streamUrl !== null && streamUrl.length === 0) bad("inbound field 'stream_url' is empty");
  let algs: string[] = [SIGNATURE_ALG];
  if (c.signature_algs !== undefined && c.signature_algs !== null) {
    if (!Array.isArray(c.signature_algs) || !c.signature_algs.every((a): a is string => typeof a === 'string')) {
      bad(`field 'signature_algs' must be an array of strings, got ${describe(c.signature_algs)}`);
    }
    algs = c.signature_algs;
  }
  const section = (key: string): Obj | null => {
    const v = c[key];
    if (v === undefined || v === null) return null;
    if (!isObj(v)) bad(`field '${key}' must be an object, got ${describe(v)}`);
    return v;
  };
  const hub = section('hub');
  const session = section('session');
  const account = section('account');
  return {
    protocol: 'MA2H',
    version,
    hub: hub && { name: optStr(hub, 'name', 'hub'), version: optStr(hub, 'version', 'hub') },
    server_time: optInstant(c, 'server_time', 'it'),
    inbound: {
      session_param: true,
      stream_url: streamUrl,
      max_wait_seconds: optPositive(inbound, 'max_wait_seconds', 'inbound'),
      stream_max_hold_seconds: optPositive(inbound, 'stream_max_hold_seconds', 'inbound'),
      keepalive_seconds: optPositive(inbound, 'keepalive_seconds', 'inbound'),
    },
    signature_algs: algs,
    replay_window_seconds: optPositive(c, 'replay_window_seconds', 'it'),
    session: session && {
      lease_default_seconds: optPositive(session, 'lease_default_seconds', 'session'),
      lease_min_seconds: optPositive(session, 'lease_min_seconds', 'session'),
      lease_max_seconds: optPositive(session, 'lease_max_seconds', 'session'),
      max_live_per_agent: optPositive(session, 'max_live_per_agent', 'session'),
    },
    account: account && { agent_directory: optStr(account, 'agent_directory', 'account') },
  };
}

export type TransportChoice = 'auto' | 'sse' | 'poll';

/**
 * auto → SSE iff the Hub advertises inbound.stream_url. An explicit `sse` against a
 * Hub with no stream is long-poll too: the product doc says "long-poll (--transport
 * poll, or no stream advertised)", and refusing would strand the mailbox for a flag.
 */
export function chooseTransport(cap: Capability, requested: TransportChoice): 'sse' | 'poll' {
  if (requested === 'poll') return 'poll';
  return cap.inbound.stream_url !== null ? 'sse' : 'poll';
}

export const replayWindowSeconds = (cap: Capability): number => cap.replay_window_seconds ?? DEFAULT_REPLAY_WINDOW_SECONDS;

/** Whether the Hub has an agent directory (§10); none means setup/upgrade write no policy. */
export const agentDirectoryPath = (cap: Capability): string | null => cap.account?.agent_directory ?? null;
