import { readdirSync } from 'node:fs';
import path from 'node:path';
import { defaultStateRoot, fail, ok, type Result } from '../core/index.js';
import { sha256Hex } from '../util/sha256.js';

/**
 * The state root: `--state-home` (absolute only), else $XDG_STATE_HOME, else ~/.local/state.
 * A relative `--state-home` is refused: it would resolve against whatever directory the
 * command happened to run in, so two runs of one agent would silently use two different
 * roots — or land in the shared one — instead of the separate root the user asked for.
 */
export function resolveStateRoot(opts: { stateHome?: string | undefined; env: NodeJS.ProcessEnv }): Result<string> {
  const given = opts.stateHome;
  if (given === undefined) return ok(defaultStateRoot(opts.env));
  if (given.trim() === '') {
    return fail(
      '--state-home is empty: give an absolute path such as --state-home "$HOME/.local/state/agent-b", or drop the flag to use the shared state root',
    );
  }
  if (!path.isAbsolute(given)) {
    return fail(
      `--state-home must be an absolute path, got "${given}": a relative path depends on the directory the command runs in, ` +
        `so runs would silently land in different (or the shared) state roots. Use --state-home "$PWD/${given}" or another absolute path`,
    );
  }
  return ok(path.normalize(given));
}

/**
 * The Hub origin as the key sees it: scheme, host and port, lowercased, with no path,
 * query or credentials, and the scheme's default port dropped — so `https://Hub.example/`
 * and `https://hub.example:443/v1` are one Hub.
 */
export function hubOrigin(hubUrl: string): Result<string> {
  let u: URL;
  try {
    u = new URL(hubUrl);
  } catch {
    return fail(`"${hubUrl}" is not a URL; a Hub URL looks like https://hub.example.com`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') {
    return fail(`"${hubUrl}" is not an http(s) URL; a Hub URL looks like https://hub.example.com`);
  }
  return ok(`${u.protocol}//${u.host}`.toLowerCase());
}

/**
 * 32 hex chars of sha256(origin + "\n" + agent id + "\n" + agent-session key). The Hub URL
 * must already be validated (the resolver does that at the edge); an invalid one here is a bug.
 */
export function stateKey(hubUrl: string, agentId: string, sessionKey: string): string {
  const origin = hubOrigin(hubUrl);
  if (!origin.ok) throw new TypeError(`stateKey: ${origin.reason}`);
  return sha256Hex(`${origin.value}\n${agentId}\n${sessionKey}`).slice(0, 32);
}

export type Leg = 'session' | 'principal';

const LEG_DIR: Record<Leg, string> = { session: 'sessions', principal: 'principal' };

export const bridgeRoot = (root: string): string => path.join(root, 'oh-hai', 'bridge');

export const legStateDir = (root: string, leg: Leg, key: string): string => path.join(bridgeRoot(root), LEG_DIR[leg], key);

export const sessionStateDir = (root: string, key: string): string => legStateDir(root, 'session', key);

export const principalStateDir = (root: string, key: string): string => legStateDir(root, 'principal', key);

export interface StateDirLocation {
  leg: Leg;
  key: string;
  dir: string;
}

const KEY_SHAPE = /^[0-9a-f]{32}$/;

/** Every state dir under a root, both legs; names that are not keys are not ours and are skipped. */
export function listStateDirs(root: string): StateDirLocation[] {
  const found: StateDirLocation[] = [];
  for (const leg of Object.keys(LEG_DIR) as Leg[]) {
    const parent = path.join(bridgeRoot(root), LEG_DIR[leg]);
    let names: string[];
    try {
      names = readdirSync(parent, { withFileTypes: true })
        .filter((d) => d.isDirectory() && KEY_SHAPE.test(d.name))
        .map((d) => d.name);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw e;
    }
    for (const key of names.sort()) found.push({ leg, key, dir: path.join(parent, key) });
  }
  return found;
}
