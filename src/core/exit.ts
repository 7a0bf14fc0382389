/**
 * The exit-code contract. This table is the single source: `oh-hai bridge --exit-codes`,
 * the man pages and the tests all read it. Codes are produced only in src/cli/program.ts.
 */
export const EXIT = {
  ok: 0,
  internal: 1,
  usage: 2,
  auth: 3,
  noSession: 4,
  held: 10,
  pinnedLapsed: 11,
  verification: 12,
  unreachable: 13,
  operatorClosed: 14,
  stoodDown: 15,
} as const;

/**
 * 128 + the signal's number, as a shell reports a process a signal ended. The reader handles
 * SIGINT and SIGTERM: it finishes the record in flight and exits with these codes itself.
 * SIGPIPE never arrives (Node ignores it, so a write to a pipe nobody reads fails with EPIPE):
 * every command then exits 141 itself, as a shell reports a writer a closed pipe ended.
 */
export const SIGNAL_EXIT = { SIGHUP: 129, SIGINT: 130, SIGQUIT: 131, SIGKILL: 137, SIGPIPE: 141, SIGTERM: 143 } as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

export interface ExitRow {
  code: number | string;
  meaning: string;
  todo: string;
}

/** The bridge's documented contract, in the product doc's words. 1 is a bug, never documented as a condition. */
export const BRIDGE_EXIT_TABLE: readonly ExitRow[] = [
  { code: 0, meaning: 'your mail was printed, or the wait elapsed with none', todo: 'act on anything printed, then run it again' },
  {
    code: 2,
    meaning: 'usage error — the flags are wrong, or a flag you named disagrees with the running connection',
    todo: 'stop; fix the command (a flagless run adopts what is running)',
  },
  { code: 3, meaning: 'auth failed — the credential is dead', todo: 'stop re-running; a human must fix it' },
  { code: 4, meaning: 'you named a session that does not exist', todo: 'stop; check --session against oh-hai fleet ls, or drop it' },
  {
    code: 10,
    meaning: 'two agents appear to share this agent session, or another home already drains it',
    todo: 'stop; give each agent its own --session <name>, or export MA2H_AGENT_SESSION_ID per agent. The refusal names the live holder — do not kill it',
  },
  {
    code: 11,
    meaning: 'the session you pinned is terminal (its lease lapsed)',
    todo: 're-run — but clear or repoint --session / MA2H_SESSION_ID first, or it exits 11 again',
  },
  { code: 12, meaning: 'an entry failed verification — possible tampering', todo: 'stop; tell a human. Never retry past it' },
  { code: 13, meaning: 'the Hub is unreachable (reconnect budget exhausted)', todo: 're-run with your own backoff; escalate if it repeats' },
  {
    code: 14,
    meaning: 'a human closed your session — the operator kill-switch',
    todo: 'stop. Do not re-run and do not start a replacement session',
  },
  {
    code: 15,
    meaning: 'this agent stood its own session down (oh-hai session close)',
    todo: 'nothing failed; run it again only if this run should have a new address',
  },
  {
    code: SIGNAL_EXIT.SIGINT,
    meaning: 'stopped by Ctrl-C (SIGINT) after finishing the record in flight',
    todo: 'nothing failed and nothing is lost — re-run when mail should flow again',
  },
  {
    code: SIGNAL_EXIT.SIGPIPE,
    meaning: 'stdout was closed before everything was printed (its reader exited, e.g. `| head -1`)',
    todo: 'nothing is lost: a record not printed is printed by the next run — re-run with stdout read to the end',
  },
  {
    code: SIGNAL_EXIT.SIGTERM,
    meaning: 'stopped by SIGTERM (a harness or `kill`) after finishing the record in flight',
    todo: 'nothing failed and nothing is lost — re-run when mail should flow again',
  },
  {
    code: '128 + N',
    meaning: 'killed from outside by a signal the bridge does not handle (SIGHUP 129, SIGQUIT 131, SIGKILL 137)',
    todo: 'nothing in the bridge failed — re-run when mail should flow again',
  },
];

/**
 * Whether re-running `oh-hai bridge` repairs a connection's stop: a clean stop (0, or none
 * recorded) or a Hub that was unreachable (13). Every other stop is a class the table says to
 * stop on; advice to re-run there (the epilogue's, doctor's) would undo it.
 */
export const rerunRepairs = (code: number | null): boolean => code === null || code === EXIT.ok || code === EXIT.unreachable;

/**
 * `oh-hai doctor`'s own codes (also `oh-hai bridge status`, which forwards to its bridge
 * checks). 20 and 21 lie outside the bridge's contract (0, 2, 3, 4, 10–15, 128 + N), so a
 * script can never mistake a doctor result for a bridge exit.
 */
export const DOCTOR_EXIT = { ok: 0, usage: 2, failed: 20, couldNotRun: 21 } as const;

export const DOCTOR_EXIT_TABLE: readonly ExitRow[] = [
  {
    code: 0,
    meaning: 'every check passed, or some only warned (a warn is a risk or an unknown, e.g. a record that exists and could not be read)',
    todo: 'read the warnings; do not relaunch anything on a warn',
  },
  { code: 2, meaning: 'usage error — the flags are wrong', todo: 'fix the command' },
  {
    code: 20,
    meaning: 'at least one check failed; each failing line names its check and the fix',
    todo: 'apply the fix the failing check prints (a failing bridge check is what a health script acts on)',
  },
  {
    code: 21,
    meaning: 'the checks could not run: the bridge could not be located (no Hub URL, credential or agent session), so nothing was judged',
    todo: 'fix what the output names, then run it again; this is not evidence that the bridge is down',
  },
];

/** An exit table as cells, header first: the CLI lays it out for a terminal or a pipe (formatTable). */
export function exitTableCells(rows: readonly ExitRow[] = BRIDGE_EXIT_TABLE): string[][] {
  return [['exit', 'meaning', 'what to do'], ...rows.map((r) => [String(r.code), r.meaning, r.todo])];
}
