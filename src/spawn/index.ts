import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync, unlinkSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { fail, ok, type Result } from '../core/index.js';
import { systemClock, type Timers } from '../util/clock.js';
import { startDetached } from './detach.js';
import { parseOutcome, type SpawnPlan } from './plan.js';

/**
 * The launcher of background connections. On POSIX a double fork: a throwaway
 * intermediate starts the program detached and exits within the call, so the program is
 * reparented (to init or the nearest subreaper) and a pid walk from the caller finds
 * nothing. Windows keeps one detached spawn: it never reparents, and a job object would
 * not be escaped by an extra hop. The pid comes back through `spawn.<nonce>.json` in `dir`.
 */

export interface LaunchRequest {
  /** How to run the program, e.g. io.self plus `__consumer --entry <dir>`. */
  execPath: string;
  args: string[];
  /** The state dir: holds the transient result file. */
  dir: string;
  logPath: string;
  /** Inherited by the program (a token in the environment is fine; never in argv). */
  env: NodeJS.ProcessEnv;
  platform?: NodeJS.Platform;
  /** Bound on the intermediate's life; it normally exits within tens of milliseconds. */
  timeoutMs?: number;
  /** The clock that bound runs on (default: the system clock). */
  clock?: Timers;
}

export const spawnResultName = (nonce: string): string => `spawn.${nonce}.json`;

const intermediateScript = (): string => fileURLToPath(new URL('./intermediate.js', import.meta.url));

export async function launchDetached(req: LaunchRequest): Promise<Result<{ pid: number }>> {
  const nonce = randomBytes(8).toString('hex');
  const plan: SpawnPlan = {
    execPath: req.execPath,
    args: req.args,
    logPath: req.logPath,
    resultPath: path.join(req.dir, spawnResultName(nonce)),
  };
  if ((req.platform ?? process.platform) === 'win32') {
    const out = await startDetached(plan, req.env);
    return 'pid' in out ? ok(out) : fail(out.error);
  }
  const exited = await runIntermediate(req.execPath, plan, req.env, req.timeoutMs ?? 30_000, req.clock ?? systemClock);
  if (!exited.ok) return exited;
  let text: string;
  try {
    text = readFileSync(plan.resultPath, 'utf8');
  } catch (e) {
    return fail(`the spawn intermediate exited (${exited.value}) without relaying a pid: ${(e as Error).message}`);
  }
  try {
    unlinkSync(plan.resultPath);
  } catch {
    // Transient either way; a leftover is harmless and never read again (the nonce is fresh).
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return fail(`${plan.resultPath} is not JSON`);
  }
  const out = parseOutcome(json);
  if (!out.ok) return out;
  return 'pid' in out.value ? ok(out.value) : fail(out.value.error);
}

function runIntermediate(execPath: string, plan: SpawnPlan, env: NodeJS.ProcessEnv, timeoutMs: number, clock: Timers): Promise<Result<string>> {
  return new Promise((resolve) => {
    const child = spawn(execPath, [intermediateScript(), JSON.stringify(plan)], { stdio: 'ignore', env });
    const cancel = clock.setTimer(timeoutMs, () => {
      child.kill('SIGKILL');
      resolve(fail(`the spawn intermediate (pid ${child.pid}) did not exit within ${timeoutMs} ms`));
    });
    child.once('error', (e) => {
      cancel();
      resolve(fail(`could not start the spawn intermediate: ${e.message}`));
    });
    child.once('exit', (code, signal) => {
      cancel();
      resolve(ok(signal ? `signal ${signal}` : `exit ${code}`));
    });
  });
}
