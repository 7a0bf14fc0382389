import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

/**
 * Run one of the reliability benches (bench/soak.mjs, bench/fuzz-consumer.mjs) at CI size as
 * a real process: its exit code is the verdict, its output (seed first) the report.
 */
export function runBench(script: string, args: string[], timeoutMs: number): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [path.join(root, 'bench', script), ...args], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    p.stdout.setEncoding('utf8').on('data', (d: string) => (output += d));
    p.stderr.setEncoding('utf8').on('data', (d: string) => (output += d));
    const timer = setTimeout(() => {
      output += `\n(bench still running after ${timeoutMs} ms: killed)`;
      p.kill('SIGTERM');
    }, timeoutMs);
    p.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}
