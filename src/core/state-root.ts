import path from 'node:path';

/** node:os only when HOME is unset: loading it costs the bridge's warm path ~0.9 M instructions. */
const homeDir = (): string => process.getBuiltinModule('node:os').homedir();

/** $XDG_STATE_HOME, else ~/.local/state. `--state-home` is resolved by the commands that take it. */
export function defaultStateRoot(env: NodeJS.ProcessEnv): string {
  const xdg = env.XDG_STATE_HOME;
  if (xdg && path.isAbsolute(xdg)) return xdg;
  return path.join(env.HOME ?? homeDir(), '.local', 'state');
}

/** $XDG_CONFIG_HOME, else ~/.config. */
export function defaultConfigRoot(env: NodeJS.ProcessEnv): string {
  const xdg = env.XDG_CONFIG_HOME;
  if (xdg && path.isAbsolute(xdg)) return xdg;
  return path.join(env.HOME ?? homeDir(), '.config');
}
