import os from 'node:os';
import path from 'node:path';

/** $XDG_STATE_HOME, else ~/.local/state. `--state-home` is resolved by the commands that take it. */
export function defaultStateRoot(env: NodeJS.ProcessEnv): string {
  const xdg = env.XDG_STATE_HOME;
  if (xdg && path.isAbsolute(xdg)) return xdg;
  return path.join(env.HOME ?? os.homedir(), '.local', 'state');
}

/** $XDG_CONFIG_HOME, else ~/.config. */
export function defaultConfigRoot(env: NodeJS.ProcessEnv): string {
  const xdg = env.XDG_CONFIG_HOME;
  if (xdg && path.isAbsolute(xdg)) return xdg;
  return path.join(env.HOME ?? os.homedir(), '.config');
}
