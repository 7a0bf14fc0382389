import type { Timers } from '../util/clock.js';
import { systemClock } from '../util/clock.js';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { EscapingOutput } from './escaping-output.js';
import { FdOutput } from './fd-output.js';
import type { Output } from '../util/output.js';
import { fstatSync } from 'node:fs';
import { intervalTicker, StatusLine, terminalFacts, TerminalOutput, type TerminalFacts } from './terminal/index.js';

/** An output of this process: the entry waits for it to drain before exiting. */
export interface ProcessOutput extends Output {
  readonly writableLength: number;
  /** The error that ended this output (EPIPE: its reader went away), set when the write fails. */
  readonly errored: Error | null;
  once(event: 'drain', listener: () => void): unknown;
}

/** Everything a command touches of the outside world, passed in so a test can run a command in-process. */
export interface CliIO {
  stdout: Output;
  stderr: Output;
  stdin: NodeJS.ReadableStream & { isTTY?: boolean };
  env: NodeJS.ProcessEnv;
  cwd: string;
  clock: Timers;
  /** How to start this same CLI as a child process (the consumer, the double-fork intermediate). */
  self: { execPath: string; args: string[] };
  /** This process's pid (a test running in-process may pretend otherwise). */
  pid: number;
  /** What stdout and stderr reach (docs/terminal.md); absent = pipes, as in an in-process test. */
  terminal?: CliTerminal;
}

/** The terminal side of a process's outputs: decided once, at start. */
export interface CliTerminal {
  stdout: TerminalFacts;
  stderr: TerminalFacts;
  /** The live status line: only when stderr is a terminal. */
  status: StatusLine | null;
}

/** The path of the launcher-independent entry script, dist/cli/main.js. */
export const mainScript = (): string => path.join(path.dirname(fileURLToPath(import.meta.url)), 'main.js');

/**
 * isatty(3) without loading node:tty on a pipe or a file: node:tty loads net and most of
 * stream, about 4 M instructions of the bridge's warm run (docs/performance.md). A terminal is
 * a character device, so anything else is answered by one fstat; a character device (a
 * terminal, or /dev/null) is asked of node:tty. A descriptor that is not open is no terminal.
 */
export function isTerminal(fd: number): boolean {
  try {
    if (!fstatSync(fd).isCharacterDevice()) return false;
  } catch {
    return false;
  }
  return process.getBuiltinModule('node:tty').isatty(fd);
}

export interface ProcessIO extends CliIO {
  stdout: ProcessOutput;
  stderr: ProcessOutput;
}

/** How a process writes stdout and stderr: Node's streams, or write(2) on the descriptors (FdOutput). */
export type Outputs = 'streams' | 'descriptors';

/**
 * This process's IO. `descriptors` writes stdout and stderr with write(2) instead of Node's
 * streams (FdOutput: the bridge's entry, where creating the streams is a seventh of a run).
 */
export function processIO(outputs: Outputs = 'streams'): ProcessIO {
  const direct = outputs === 'descriptors' && process.platform !== 'win32';
  const rawOut: ProcessOutput = direct ? new FdOutput(1, () => process.stdout) : process.stdout;
  const rawErr: ProcessOutput = direct ? new FdOutput(2, () => process.stderr) : process.stderr;
  // process.stdout/stderr are only touched on a terminal: creating them on a pipe costs the bridge's warm path.
  const outTty = isTerminal(1);
  const errTty = isTerminal(2);
  const outFacts = terminalFacts(outTty, outTty ? process.stdout.columns : undefined, process.env);
  const errFacts = terminalFacts(errTty, errTty ? process.stderr.columns : undefined, process.env);
  const status = errFacts.tty ? new StatusLine(rawErr, intervalTicker, () => process.stderr.columns ?? null) : null;
  const decorated = (raw: ProcessOutput, facts: TerminalFacts, wrap: boolean): ProcessOutput =>
    facts.tty || facts.color ? new TerminalOutput(raw, facts, { wrap, status }) : raw;
  return {
    // stderr is human text only, so it wraps; stdout may be JSON or a table laid out for its width.
    stdout: new EscapingOutput(decorated(rawOut, outFacts, false)),
    stderr: new EscapingOutput(decorated(rawErr, errFacts, true)),
    terminal: { stdout: outFacts, stderr: errFacts, status },
    // A getter: process.stdin builds a stream (and loads its modules) on first access, and most
    // commands never read it.
    get stdin() {
      return process.stdin;
    },
    // A getter too: the entry script's path is a file-URL round trip (and V8 compiling Node's URL
    // code for it), wanted only by a run that starts a child, which the bridge's warm run does not.
    get self() {
      return { execPath: process.execPath, args: [mainScript()] };
    },
    env: process.env,
    cwd: process.cwd(),
    clock: systemClock,
    pid: process.pid,
  };
}
