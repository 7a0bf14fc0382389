import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const ohHaiBin = path.join(repoRoot, 'bin', 'oh-hai');

export interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Run the real oh-hai CLI (built dist/) as a process and collect its output. */
export function runOhHai(args: string[], opts: { env: NodeJS.ProcessEnv; cwd?: string; input?: string; timeoutMs?: number }): Promise<RunResult> {
  const child = startOhHai(args, opts);
  if (opts.input !== undefined) child.stdin?.end(opts.input);
  else child.stdin?.end();
  return collect(child, opts.timeoutMs ?? 60_000);
}

/** Start the real oh-hai CLI and return the live process (for signal tests). */
export function startOhHai(args: string[], opts: { env: NodeJS.ProcessEnv; cwd?: string }): ChildProcess {
  return spawn(process.execPath, [ohHaiBin, ...args], {
    env: opts.env,
    cwd: opts.cwd ?? repoRoot,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
}

export function collect(child: ChildProcess, timeoutMs = 60_000): Promise<RunResult> {
  let stdout = '';
  let stderr = '';
  child.stdout?.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr?.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`oh-hai did not exit within ${timeoutMs} ms\nstdout: ${stdout}\nstderr: ${stderr}`));
    }, timeoutMs);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}
