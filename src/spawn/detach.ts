import { spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import type { SpawnOutcome, SpawnPlan } from './plan.js';

/**
 * Start the plan's program detached: its own session and process group, stdin from
 * /dev/null, stdout and stderr appended to the log. Resolves with its pid once the OS
 * has it, or with why it could not be started.
 */
export function startDetached(plan: SpawnPlan, env: NodeJS.ProcessEnv): Promise<SpawnOutcome> {
  let log: number;
  try {
    log = openSync(plan.logPath, 'a', 0o600);
  } catch (e) {
    return Promise.resolve({ error: `could not open ${plan.logPath}: ${(e as Error).message}` });
  }
  return new Promise((resolve) => {
    try {
      const child = spawn(plan.execPath, plan.args, { detached: true, stdio: ['ignore', log, log], env, windowsHide: true });
      child.once('error', (e) => resolve({ error: `could not start ${plan.execPath}: ${e.message}` }));
      child.once('spawn', () => resolve({ pid: child.pid as number }));
      child.unref();
    } catch (e) {
      resolve({ error: `could not start ${plan.execPath}: ${(e as Error).message}` });
    } finally {
      closeSync(log);
    }
  });
}
