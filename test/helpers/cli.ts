import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll } from 'vitest';

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

/**
 * Every oh-hai this test file started and that is still running. A test that fails before
 * its cleanup (a Hub that never printed its ready line, an assertion before `dispose`) would
 * leave its process holding a port and a temp dir for the rest of the run: what is left is
 * killed once the file's tests are done (this module is imported afresh by each test file,
 * during its collection, so the hook belongs to that file).
 */
const running = new Set<ChildProcess>();
afterAll(() => {
  for (const child of running) child.kill('SIGKILL');
});

/** Start the real oh-hai CLI and return the live process (for signal tests). */
export function startOhHai(args: string[], opts: { env: NodeJS.ProcessEnv; cwd?: string }): ChildProcess {
  const child = spawn(process.execPath, [ohHaiBin, ...args], {
    env: opts.env,
    cwd: opts.cwd ?? repoRoot,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  running.add(child);
  child.once('exit', () => running.delete(child));
  return child;
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
