import type { Clock } from '../util/clock.js';
import { systemClock } from '../util/clock.js';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

/** Everything a command touches of the outside world, passed in so a test can run a command in-process. */
export interface CliIO {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  stdin: NodeJS.ReadableStream & { isTTY?: boolean };
  env: NodeJS.ProcessEnv;
  cwd: string;
  clock: Clock;
  /** How to start this same CLI as a child process (the consumer, the double-fork intermediate). */
  self: { execPath: string; args: string[] };
  /** This process's pid (a test running in-process may pretend otherwise). */
  pid: number;
}

/** The path of the launcher-independent entry script, dist/cli/main.js. */
export const mainScript = (): string => path.join(path.dirname(fileURLToPath(import.meta.url)), 'main.js');

export function processIO(): CliIO {
  return {
    stdout: process.stdout,
    stderr: process.stderr,
    // A getter: process.stdin builds a stream (and loads its modules) on first access, and most
    // commands never read it.
    get stdin() {
      return process.stdin;
    },
    env: process.env,
    cwd: process.cwd(),
    clock: systemClock,
    self: { execPath: process.execPath, args: [mainScript()] },
    pid: process.pid,
  };
}

/** Write and resolve once the bytes have been handed to the OS (for pipes: flushed). */
export function writeFlushed(stream: NodeJS.WritableStream, text: string): Promise<void> {
  return new Promise((resolve, reject) => {
    stream.write(text, (err?: Error | null) => (err ? reject(err) : resolve()));
  });
}
