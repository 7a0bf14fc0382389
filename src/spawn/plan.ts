import { fail, ok, type Result } from '../core/index.js';

/** What the double-fork intermediate is asked to do: the only thing it reads is this, from its argv. */
export interface SpawnPlan {
  /** The program to start detached, and its arguments (never a secret: the environment carries those). */
  execPath: string;
  args: string[];
  /** Where its stdout and stderr go (appended): anything it prints past its own log, e.g. a crash. */
  logPath: string;
  /** Where the intermediate relays the outcome: `{pid}` or `{error}`. */
  resultPath: string;
}

export type SpawnOutcome = { pid: number } | { error: string };

const isStr = (v: unknown): v is string => typeof v === 'string' && v.length > 0;

export function parsePlan(text: string | undefined): Result<SpawnPlan> {
  let x: unknown;
  try {
    x = JSON.parse(text ?? '');
  } catch {
    return fail('the spawn plan is not JSON');
  }
  if (typeof x !== 'object' || x === null) return fail('the spawn plan is not an object');
  const o = x as Record<string, unknown>;
  const args = o.args;
  if (!isStr(o.execPath) || !isStr(o.logPath) || !isStr(o.resultPath) || !Array.isArray(args) || !args.every(isStr)) {
    return fail('the spawn plan lacks execPath, args, logPath or resultPath');
  }
  return ok({ execPath: o.execPath, args: [...args], logPath: o.logPath, resultPath: o.resultPath });
}

export function parseOutcome(x: unknown): Result<SpawnOutcome> {
  if (typeof x === 'object' && x !== null) {
    const o = x as Record<string, unknown>;
    if (typeof o.pid === 'number' && Number.isSafeInteger(o.pid) && o.pid > 0) return ok({ pid: o.pid });
    if (typeof o.error === 'string') return ok({ error: o.error });
  }
  return fail('the spawn result is neither {pid} nor {error}');
}
