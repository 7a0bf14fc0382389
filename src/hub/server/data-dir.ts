import { chmodSync, statSync } from 'node:fs';
import path from 'node:path';
import { defaultStateRoot } from '../../core/index.js';
import { ensureDir } from '../../util/fs-durable.js';

/**
 * Make the data dir private (0700), creating it if needed. A dir that already existed keeps its
 * mode under ensureDir, so one made 0755 by hand or by an older build is tightened here, as the
 * bridge repairs its state dir. Returns the mode it had when it was too open, else null.
 */
export function privateDataDir(dir: string): number | null {
  ensureDir(dir, 0o700);
  const mode = statSync(dir).mode & 0o777;
  if ((mode & 0o077) === 0) return null;
  chmodSync(dir, (mode & 0o700) | 0o700);
  return mode;
}

/** The Hub's store lives under the state root, never in the cwd: `<state root>/oh-hai/hub`. */
export function defaultHubDataDir(env: NodeJS.ProcessEnv): string {
  return path.join(defaultStateRoot(env), 'oh-hai', 'hub');
}

/** `--data` if given (relative paths resolve against the cwd the user typed them in), else the default. */
export function resolveDataDir(flag: string | undefined, env: NodeJS.ProcessEnv, cwd: string): string {
  return flag === undefined ? defaultHubDataDir(env) : path.resolve(cwd, flag);
}
