import type { Command, CommanderError } from 'commander';
import { appendFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import type { CommandGroup } from './commands/index.js';
import { EXIT, SIGNAL_EXIT, defaultStateRoot, type Outcome } from '../core/index.js';
import type { CommandHost } from './host.js';
import { processIO, type CliIO, type Outputs, type ProcessIO } from './io.js';
import { escapeUnsafe } from '../util/escape.js';
import { writeFlushed } from '../util/output.js';
import { VERSION } from './version.js';
import { arrangeHelp } from './help.js';

/**
 * The CLI's machinery, for a given set of command groups: main.ts runs it with every group,
 * bridge-main.ts with what `oh-hai bridge` can reach, so the bridge's bundle carries nothing
 * else (docs/performance.md).
 */

export interface Finished {
  name: string;
  outcome: Outcome;
}

/**
 * Build the program. When `argv` names a top-level command, only the group that declares it
 * is loaded: a run pays for every module it loads, and the bridge's warm path is mostly that
 * (docs/performance.md). Without `argv` (man pages, tests), or when it names no known
 * command (`--help`, `help`, a typo that wants a suggestion), every group is registered.
 */
export async function buildProgramOf(groups: readonly CommandGroup[], io: CliIO, onFinish: (f: Finished) => void, argv?: readonly string[]): Promise<Command> {
  const named = argv === undefined ? undefined : firstOperand(argv);
  const only = groups.filter((g) => named !== undefined && g.commands.includes(named));
  const registrations = await Promise.all((only.length > 0 ? only : groups).map((g) => g.load()));
  const { Command } = await import('commander');
  const program = new Command('oh-hai');
  program
    .description('Keeps AI agents reachable: run `oh-hai bridge` as a background task and re-run it after every exit.')
    .version(VERSION, '-V, --version')
    .showSuggestionAfterError(true)
    .exitOverride(throwNamed(program))
    .configureOutput({
      writeOut: (s) => io.stdout.write(s),
      writeErr: (s) => io.stderr.write(s),
      outputError: () => {
        /* printed by runCliOf as a usage line */
      },
    });
  const host: CommandHost = {
    io,
    finish: (name, outcome) => onFinish({ name, outcome }),
    forward: (args) => runCliOf(groups, args, io),
  };
  for (const register of registrations) register(program, host);
  arrangeHelp(program);
  program.commands.forEach(function propagate(c: Command) {
    c.exitOverride(throwNamed(c));
    c.configureOutput(program.configureOutput());
    c.commands.forEach(propagate);
  });
  return program;
}

/** The command a usage error was found in (`oh-hai fleet ls`), by the error commander threw. */
const failedIn = new WeakMap<object, string>();

function commandPath(c: Command): string {
  const names: string[] = [];
  for (let at: Command | null = c; at !== null; at = at.parent) names.unshift(at.name());
  return names.join(' ');
}

/**
 * Commander's exit, as a throw that remembers which command refused: a wrong flag of
 * `fleet ls` must be named `oh-hai fleet ls`, pointing at its own --help, not at the group's.
 */
const throwNamed =
  (c: Command) =>
  (err: CommanderError): never => {
    failedIn.set(err, commandPath(c));
    throw err;
  };

/** Run the CLI in-process and return the exit code; everything printed goes to io. */
export async function runCliOf(groups: readonly CommandGroup[], argv: string[], io: CliIO): Promise<number> {
  let finished: Finished | undefined;
  try {
    const named = firstOperand(argv);
    finished = (await groups.find((g) => named !== undefined && g.commands.includes(named))?.fast?.(argv, io)) ?? undefined;
    if (finished === undefined) {
      const program = await buildProgramOf(groups, io, (f) => (finished = f), argv);
      // Bare `oh-hai` asks what it can do: the help, on stdout, and success (as gh does).
      if (argv.length === 0) {
        await writeFlushed(io.stdout, program.helpInformation());
        return EXIT.ok;
      }
      await program.parseAsync(argv, { from: 'user' });
    }
  } catch (err) {
    if (isClosedPipe(err)) return SIGNAL_EXIT.SIGPIPE;
    const { CommanderError } = await import('commander');
    if (err instanceof CommanderError) {
      if (err.exitCode === 0) return EXIT.ok;
      io.stderr.write(usageLines(failedIn.get(err) ?? commandName(argv), err.code, err.message.replace(/^error: /, '')));
      return EXIT.usage;
    }
    return internalError(io, argv, err);
  }
  if (!finished) return EXIT.ok;
  printOutcome(io, finished.name, finished.outcome);
  return finished.outcome.exit;
}

/**
 * The process entry for a run that needs no commander (the bridge's bundle: bridge-main.ts):
 * the command's outcome printed as runCliOf prints it, and a throw reported as runCliOf does.
 * Apart from runCliOf, so that a bundle built from it carries neither commander nor any
 * command group's registration.
 */
export async function runProcessWithout(argv: string[], outputs: Outputs, command: (io: CliIO) => Promise<Finished>): Promise<void> {
  const io = processIO(outputs);
  const closed = hearClosedPipes(io);
  let code: number;
  try {
    const finished = await command(io);
    printOutcome(io, finished.name, finished.outcome);
    code = finished.outcome.exit;
  } catch (err) {
    code = isClosedPipe(err) ? SIGNAL_EXIT.SIGPIPE : internalError(io, argv, err);
  }
  exitDrained(io, code, closed);
}

/** A write failed because nobody reads that pipe any more (`oh-hai … | head -1` after head exited). */
const isClosedPipe = (e: unknown): boolean => e instanceof Error && (e as NodeJS.ErrnoException).code === 'EPIPE';

/**
 * Node ignores SIGPIPE, so a closed pipe is a write's EPIPE, emitted as 'error': unheard, that
 * is a stack trace and exit 1 for what a shell reports of any other writer as a quiet 141. So
 * EPIPE is heard here, and the answer says whether stdout met it (a stream's `errored` is set
 * when the write fails, before the event, and Node clears it on process.stdout afterwards).
 * Any other write error still crashes.
 */
function hearClosedPipes(io: ProcessIO): () => boolean {
  let closed = false;
  const onError = (e: Error) => {
    if (!isClosedPipe(e)) throw e;
  };
  io.stdout.on('error', (e) => {
    onError(e);
    closed = true;
  });
  io.stderr.on('error', onError);
  return () => closed || isClosedPipe(io.stdout.errored);
}

/** The top-level command argv names: the program's own options (-V, -h) take no value. */
const firstOperand = (argv: readonly string[]): string | undefined => argv.find((a) => !a.startsWith('-'));

function commandName(argv: string[]): string {
  const first = firstOperand(argv);
  return first ? `oh-hai ${first}` : 'oh-hai';
}

/**
 * A usage error and where to read more, named by the command that refused it. An unknown
 * command is refused by the one it was typed under (`oh-hai`, not `oh-hai brige`), and the
 * help pointed to is the one commander suggests when it has a suggestion: the hint must be a
 * command that exists.
 */
function usageLines(name: string, code: string, message: string): string {
  const suggested = code === 'commander.unknownCommand' ? /Did you mean ([\w-]+)\?/.exec(message)?.[1] : undefined;
  const help = suggested === undefined ? name : `${name} ${suggested}`;
  const token = code === 'commander.unknownOption' && /^unknown option '--token(=|')/.test(message) ? TOKEN_IN_A_FLAG : '';
  return `${name}: ${message}\n${token}Run '${help} --help' for usage.\n`;
}

/**
 * `--token <t>` on a command that has no such flag: by the time it is refused the token is in
 * shell history and the process listing, so the refusal says that and where a token does go —
 * "unknown option" alone reads as "wrong spelling", and a user then tries the next one.
 */
const TOKEN_IN_A_FLAG =
  'No command takes a token as a flag value — it lands in shell history and in every process listing: treat that token as exposed and rotate it. ' +
  "An agent's token is stored with oh-hai login --token-stdin < token-file (or read from OH_HAI_TOKEN); the hub commands read the human token from the Hub's data dir.\n";

function printOutcome(io: CliIO, name: string, o: Outcome): void {
  const style = o.style ?? (o.exit === EXIT.ok ? 'silent' : 'fatal');
  const code = o.code ?? 'error';
  // One line each: a message may quote a Hub's words (escapeUnsafe also escapes their line breaks).
  const message = escapeUnsafe(o.message ?? '');
  if (style === 'fatal') io.stderr.write(`${name}: FATAL (exit ${o.exit}, ${code}) — ${message}\n`);
  else if (style === 'stood_down') io.stderr.write(`${name}: STOOD DOWN (exit ${o.exit}, ${code}) — ${message}\n`);
  else if (style === 'stopped') io.stderr.write(`${name}: STOPPED (exit ${o.exit}, ${code}) — ${message}\n`);
  else if (style === 'plain' && message) io.stderr.write(`${name}: ${message}\n`);
  for (const line of o.after ?? []) io.stderr.write(line + '\n');
}

function internalError(io: CliIO, argv: string[], err: unknown): number {
  const logDir = path.join(defaultStateRoot(io.env), 'oh-hai');
  const logPath = path.join(logDir, 'internal-errors.log');
  const detail = err instanceof Error ? (err.stack ?? err.message) : String(err);
  let where = logPath;
  try {
    mkdirSync(logDir, { recursive: true, mode: 0o700 });
    appendFileSync(logPath, `${new Date(io.clock.now()).toISOString()} oh-hai ${argv[0] ?? ''}\n${detail}\n\n`, { mode: 0o600 });
  } catch {
    where = '(could not write the log; details follow)\n' + detail;
  }
  const msg = err instanceof Error ? err.message : String(err);
  io.stderr.write(`${commandName(argv)}: FATAL (exit 1, internal) — this is a bug in oh-hai: ${msg}. Details: ${where}\n`);
  return EXIT.internal;
}

/** The process entry (bin/oh-hai, through main.ts or bridge-main.ts). The only place that calls process.exit. */
export async function runProcess(groups: readonly CommandGroup[], outputs: Outputs = 'streams'): Promise<void> {
  const io = processIO(outputs);
  const closed = hearClosedPipes(io);
  exitDrained(io, await runCliOf(groups, process.argv.slice(2), io), closed);
}

/**
 * Exit once stdout has drained, so a pipe reader gets every byte we promised. A stdout whose
 * reader went away never drains: the run ends at once, 141 where it would have been 0 (the
 * output was not all read), the command's own code otherwise.
 */
function exitDrained(io: ProcessIO, code: number, closed: () => boolean): void {
  const exit = () => process.exit(closed() && code === EXIT.ok ? SIGNAL_EXIT.SIGPIPE : code);
  if (!closed() && io.stdout.writableLength > 0) {
    io.stdout.once('drain', exit);
    io.stdout.on('error', exit);
  } else exit();
}
