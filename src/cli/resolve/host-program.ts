import path from 'node:path';
import { fail, ok, type Result } from '../../core/index.js';

/**
 * The long-lived program hosting the agent: walk up the process tree from the reader's
 * parent past shells and wrappers (which a harness spawns per task and which exit with
 * it) to the first ancestor that is neither. It is identified by pid AND start time, so a
 * recycled pid is a different program.
 */

export interface ProcessInspector {
  parentPid(pid: number): number | null;
  /** The program name (comm or argv[0]) of a process, or null when it cannot be read. */
  command(pid: number): string | null;
  startTime(pid: number): string | null;
}

export interface HostProgram {
  pid: number;
  startTime: string;
  command: string;
}

/** Programs that only run or wrap another one: never the host of an agent. */
const PASS_THROUGH = new Set([
  // shells
  'sh',
  'bash',
  'dash',
  'zsh',
  'ksh',
  'mksh',
  'pdksh',
  'ash',
  'fish',
  'csh',
  'tcsh',
  'busybox',
  'nu',
  'elvish',
  'xonsh',
  'pwsh',
  'powershell',
  'cmd',
  // wrappers that exec or supervise one child
  'env',
  'nohup',
  'timeout',
  'sudo',
  'su',
  'doas',
  'setsid',
  'stdbuf',
  'nice',
  'ionice',
  'chrt',
  'taskset',
  'time',
  'xargs',
  'script',
  'unbuffer',
  'flock',
  'caffeinate',
  'tini',
  'dumb-init',
  'catatonit',
  'runuser',
  'prlimit',
  'npx',
  'npm',
  'pnpm',
  'yarn',
  'bunx',
  'corepack',
  'oh-hai',
]);

/** The bare program name: no directory, no `.exe`, no leading `-` of a login shell. */
export function programName(command: string): string {
  const first = command.trim().split(/\s+/)[0] ?? '';
  return path
    .basename(first.replace(/\\/g, '/'))
    .replace(/^-/, '')
    .replace(/\.exe$/i, '')
    .toLowerCase();
}

export function isPassThrough(command: string): boolean {
  const name = programName(command);
  // npm sets its title to "npm exec …", "npm run …"; comm truncates it further.
  return PASS_THROUGH.has(name) || /^(npm|npx|pnpm|yarn)\b/.test(command.trim());
}

const MAX_DEPTH = 64;

export function findHostProgram(fromPid: number, inspect: ProcessInspector): Result<HostProgram> {
  let pid = inspect.parentPid(fromPid);
  const seen: string[] = [];
  for (let depth = 0; depth < MAX_DEPTH; depth++) {
    if (pid === null) return fail(`could not read the parent of ${seen.at(-1) ?? `pid ${fromPid}`}`);
    if (pid <= 1) return fail(`reached init without a long-lived program (walked ${seen.join(' → ') || 'nothing'})`);
    const command = inspect.command(pid);
    if (command === null) return fail(`could not read the program of pid ${pid}`);
    if (!isPassThrough(command)) {
      const startTime = inspect.startTime(pid);
      if (startTime === null) return fail(`could not read the start time of ${programName(command)} pid ${pid}, so a recycled pid could not be told apart`);
      return ok({ pid, startTime, command: programName(command) || command });
    }
    seen.push(`${programName(command)} pid ${pid}`);
    pid = inspect.parentPid(pid);
  }
  return fail(`the process tree above pid ${fromPid} is deeper than ${MAX_DEPTH} shells and wrappers`);
}
