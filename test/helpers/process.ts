import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { waitFor } from './wait.js';

/** The process no longer runs (gone, or a zombie awaiting its parent). */
export function gone(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.startsWith('Z') ?? false;
  } catch {
    return true;
  }
}

/** Send `signal` and wait until the process is gone; one that is already gone is left be. */
export async function killAndWait(pid: number, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
  try {
    process.kill(pid, signal);
  } catch {
    return;
  }
  await waitFor(() => gone(pid), { what: `pid ${pid} to exit` });
}

/**
 * Live processes whose command line mentions `text` (Linux: /proc). A connection started by a
 * run that has just exited may not have written consumer.json yet; its command line names its
 * entry from the start, so cleanup finds it even then.
 */
export function processesMentioning(text: string): number[] {
  const found: number[] = [];
  for (const name of readdirSync('/proc')) {
    const pid = Number(name);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    try {
      if (
        readFileSync(`/proc/${pid}/cmdline`, 'utf8')
          .split('\0')
          .some((arg) => arg.includes(text))
      )
        found.push(pid);
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

/** Hands each chunk's complete lines of a child's output to `onLines` (a line cut by a kill never arrives). */
export function onLines(stream: Readable, onLines: (lines: string[]) => void): void {
  let buffered = '';
  stream.setEncoding('utf8').on('data', (d: string) => {
    buffered += d;
    const lines = buffered.split('\n');
    buffered = lines.pop() ?? '';
    onLines(lines);
  });
}

/**
 * Run `node script …args` (a crash test's stand-in writer), hand each line it prints to
 * `onLine`, and SIGKILL it once it has printed `lines` lines. Throws if it stopped on its own.
 */
export async function runUntilKilled(script: string, args: readonly string[], lines: number, onLine: (line: string) => void): Promise<void> {
  const child = spawn(process.execPath, [script, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let printed = 0;
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  onLines(child.stdout, (got) => {
    for (const line of got) {
      printed += 1;
      onLine(line);
    }
    if (printed >= lines && child.exitCode === null) child.kill('SIGKILL');
  });
  const exit = await new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('close', (code, signal) => resolve({ code, signal })),
  );
  if (exit.signal !== 'SIGKILL') throw new Error(`${path.basename(script)} stopped on its own (code ${exit.code}): ${stderr}`);
}
