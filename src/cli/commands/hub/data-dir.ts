import path from 'node:path';
import { defaultStateRoot } from '../../../core/index.js';

/** The Hub's store lives under the state root, never in the cwd: `<state root>/oh-hai/hub`. */
export function defaultHubDataDir(env: NodeJS.ProcessEnv): string {
  return path.join(defaultStateRoot(env), 'oh-hai', 'hub');
}

/** `--data` if given (relative paths resolve against the cwd the user typed them in), else the default. */
export function resolveDataDir(flag: string | undefined, env: NodeJS.ProcessEnv, cwd: string): string {
  return flag === undefined ? defaultHubDataDir(env) : path.resolve(cwd, flag);
}

export { HUMAN_TOKEN_FILE, HUB_RECORD_FILE } from '../../../hub/server/files.js';
