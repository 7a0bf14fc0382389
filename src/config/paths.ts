import { realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import { defaultConfigRoot } from '../core/index.js';

/** `$XDG_CONFIG_HOME/oh-hai` (else `~/.config/oh-hai`): the user config and the credentials live here. */
export const userConfigDir = (env: NodeJS.ProcessEnv): string => path.join(defaultConfigRoot(env), 'oh-hai');

export const userConfigPath = (env: NodeJS.ProcessEnv): string => path.join(userConfigDir(env), 'config.toml');

export const credentialsPath = (env: NodeJS.ProcessEnv): string => path.join(userConfigDir(env), 'credentials.json');

/** The OH_HAI_TOKEN → agent id cache: `<state root>/oh-hai/identities.json`. */
export const identitiesPath = (stateRoot: string): string => path.join(stateRoot, 'oh-hai', 'identities.json');

const isFile = (p: string): boolean => {
  try {
    return statSync(p).isFile();
  } catch {
    return false;
  }
};

const real = (p: string): string => {
  try {
    return realpathSync(p);
  } catch {
    return path.resolve(p);
  }
};

/**
 * The nearest `.oh-hai/config.toml` from `cwd` up to the filesystem root. A candidate that
 * is really the user config (a `.oh-hai` symlinked to `~/.config/oh-hai`) is skipped: read
 * as a project file its `[bridge]` table would be refused, and read twice it would count twice.
 */
export function findProjectConfig(cwd: string, env: NodeJS.ProcessEnv): string | null {
  const userFile = real(userConfigPath(env));
  let dir = path.resolve(cwd);
  for (;;) {
    const candidate = path.join(dir, '.oh-hai', 'config.toml');
    if (isFile(candidate) && real(candidate) !== userFile) return candidate;
    const parent = path.dirname(dir);
    if (parent === dir) return null;
    dir = parent;
  }
}
