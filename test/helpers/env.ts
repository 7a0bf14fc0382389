import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export interface TempEnv {
  root: string;
  env: NodeJS.ProcessEnv;
  cleanup(): void;
}

/** An agent on a machine of its own: its credential and address, and a HOME and state root no other party shares. */
export interface Party {
  id: string;
  token: string;
  address: string;
  temp: TempEnv;
  env: NodeJS.ProcessEnv;
  stateRoot: string;
}

/**
 * A private HOME, XDG_STATE_HOME and XDG_CONFIG_HOME for one test, so no test touches
 * the user's home. Inherits PATH and nothing oh-hai-specific from the outer environment.
 */
export function tempEnv(extra: NodeJS.ProcessEnv = {}): TempEnv {
  const root = mkdtempSync(path.join(os.tmpdir(), 'oh-hai-test-'));
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: path.join(root, 'home'),
    XDG_STATE_HOME: path.join(root, 'state'),
    XDG_CONFIG_HOME: path.join(root, 'config'),
    TMPDIR: os.tmpdir(),
    LANG: 'C.UTF-8',
    ...extra,
  };
  return {
    root,
    env,
    cleanup: () => rmSync(root, { recursive: true, force: true }),
  };
}
