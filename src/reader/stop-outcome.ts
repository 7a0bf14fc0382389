import { EXIT, SIGNAL_EXIT, type Outcome } from '../core/index.js';
import { spooledPastRecord, STATE_FILES, type ConsumerRecord, type ReaderRecord, type StateDir } from '../spool/index.js';
import { sessionHeldMessage } from './holder.js';

/** How each way a reader run can end becomes an Outcome (the stop line; program.ts prints it). */

/**
 * The exit-10 stop's account of this entry's session: session.json's, or the one the spool names
 * past it — or, session.json removed by `oh-hai session close`, past the session stood down — the
 * one the connection took up. A pinned session is never replaced, so nothing is spooled past one.
 */
function heldMessage(r: ConsumerRecord, stateDir: StateDir, nowMs: number): string {
  const session = stateDir.read('session');
  return sessionHeldMessage(r.stop_message, session, nowMs, spooledPastRecord(stateDir.dir, session));
}

/** The background connection recorded a stop: the reader exits with ITS code, after printing what it left. */
export function consumerStopOutcome(r: ConsumerRecord, stateDir: StateDir, nowMs: number): Outcome {
  const logPath = stateDir.path(STATE_FILES.log);
  const code = r.exit_code ?? EXIT.internal;
  const reason = r.stop_reason ?? 'stopped';
  const message = r.stop_message ?? `the background connection (pid ${r.pid}) stopped with exit ${code} and recorded no message; see ${logPath}`;
  if (code === EXIT.ok) return { exit: EXIT.ok, style: 'plain', code: reason, message: `the background connection stopped (${reason}): ${message}` };
  if (code === EXIT.stoodDown) return { exit: code, style: 'stood_down', code: reason, message };
  if (code === EXIT.held && reason === 'session_held') return { exit: code, code: reason, message: heldMessage(r, stateDir, nowMs) };
  return { exit: code, code: reason, message };
}

export function consumerDiedOutcome(pid: number, logPath: string): Outcome {
  return {
    exit: EXIT.ok,
    style: 'plain',
    code: 'consumer_died',
    message:
      `the background connection (pid ${pid}) exited without recording a stop — killed from outside, or it crashed (its last lines are in ${logPath}). ` +
      `Nothing printed is lost; run oh-hai bridge again: it starts a new connection.`,
  };
}

export function signalOutcome(signal: 'SIGINT' | 'SIGTERM'): Outcome {
  return {
    exit: SIGNAL_EXIT[signal],
    code: signal === 'SIGINT' ? 'interrupted' : 'terminated',
    // Asked to stop is not a failure: no FATAL marker (the exit table documents both codes).
    style: 'stopped',
    message: `stopped by ${signal === 'SIGINT' ? 'Ctrl-C (SIGINT)' : 'SIGTERM'} after finishing the record in flight; nothing is lost — the next run continues from the cursor`,
  };
}

export function displacedOutcome(by: Pick<ReaderRecord, 'pid' | 'host'>): Outcome {
  return {
    exit: EXIT.ok,
    style: 'plain',
    code: 'displaced',
    message:
      `a newer reader of this agent session (pid ${by.pid} on ${by.host}) took over, so this one stopped: one reader prints your mail. ` +
      `Nothing is lost and there is nothing to re-run for this exit — that reader continues from the cursor.`,
  };
}

export function orphanedOutcome(starterPid: number): Outcome {
  return {
    exit: EXIT.ok,
    style: 'plain',
    code: 'starter_gone',
    message: `the process that started this reader (pid ${starterPid}) is gone, so nobody reads this output; stopping rather than keeping the address alive unread. Nothing is lost.`,
  };
}

/** stdout was closed under us (EPIPE): the shell's code for a broken pipe, 128 + SIGPIPE. */
export function stdoutClosedOutcome(err: unknown): Outcome {
  return {
    exit: 141,
    code: 'stdout_closed',
    message: `stdout was closed before a record could be printed (${(err as Error).message}); the cursor did not move past it, so the next run prints it again`,
  };
}
