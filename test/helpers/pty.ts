import { spawn, spawnSync } from 'node:child_process';
import { ohHaiBin, repoRoot } from './cli.js';

/** `script` from util-linux runs a command on a real pseudo-terminal; without it pty tests cannot run. */
export const hasScript = (): boolean => spawnSync('script', ['--version'], { stdio: 'ignore' }).status === 0;

export interface PtyResult {
  code: number | null;
  /** Everything written to the terminal (stdout and stderr together), `\r\n` as the terminal got it. */
  tty: string;
}

const quote = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;

/**
 * Run the real oh-hai CLI with stdout and stderr on a pseudo-terminal `cols` wide
 * (`script -qefc`). `redirect` is appended to the command line as shell text (e.g.
 * `> /path/out.txt` to send stdout to a file while stderr stays on the terminal). `onOutput`
 * sees everything so far after each chunk; once `until` holds, the run is ended with SIGTERM
 * (`script` passes it on), so a test ends on what it waited for instead of the run's --wait.
 */
export function runOnPty(
  args: string[],
  opts: {
    env: NodeJS.ProcessEnv;
    cols?: number;
    redirect?: string;
    timeoutMs?: number;
    onOutput?: (tty: string) => void;
    until?: (tty: string) => boolean;
  },
): Promise<PtyResult> {
  const cmd = [process.execPath, ohHaiBin, ...args].map(quote).join(' ');
  const inner = `stty cols ${opts.cols ?? 80} rows 24 2>/dev/null; exec ${cmd} ${opts.redirect ?? ''}`;
  const child = spawn('script', ['-qefc', inner, '/dev/null'], { env: opts.env, cwd: repoRoot, stdio: ['pipe', 'pipe', 'pipe'] });
  child.stdin.end();
  let tty = '';
  const take = (d: string) => {
    tty += d;
    opts.onOutput?.(tty);
    if (!child.killed && opts.until?.(tty)) child.kill('SIGTERM');
  };
  child.stdout.setEncoding('utf8').on('data', take);
  child.stderr.setEncoding('utf8').on('data', take);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`oh-hai on a pty did not exit within ${opts.timeoutMs ?? 60_000} ms\n${tty}`));
    }, opts.timeoutMs ?? 60_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, tty });
    });
  });
}

/** What a terminal shows of pty output: line endings as `\n`, colour removed. */
export const plainText = (tty: string): string => tty.replace(/\r\n/g, '\n').replace(/\x1b\[[0-9;]*m/g, '');
