import type { CodedError } from './coded.js';
import { EXIT } from './exit.js';

/**
 * What a command returns. Commands never exit: the one CLI entry (program.ts) turns an
 * Outcome into stderr lines and an exit code.
 */
export interface Outcome {
  exit: number;
  /** snake_case reason, e.g. `session_lapsed`; printed in the FATAL line. */
  code?: string;
  /** Human text: what was wrong, where, and the fix. */
  message?: string;
  /**
   * How the stop line is printed:
   * - `fatal` (default for exit ≠ 0): `oh-hai <cmd>: FATAL (exit n, code) — message`
   * - `stood_down`: `oh-hai <cmd>: STOOD DOWN (exit 15, code) — message`
   * - `stopped`: `oh-hai <cmd>: STOPPED (exit 130, code) — message` (asked to stop: Ctrl-C, SIGTERM)
   * - `plain`: `oh-hai <cmd>: message` (no FATAL marker; e.g. doctor's failing result)
   * - `silent`: nothing (the command already printed what it had to say)
   */
  style?: 'fatal' | 'stood_down' | 'stopped' | 'plain' | 'silent';
  /** Lines printed on stderr after the stop line, verbatim (the lease epilogue). */
  after?: string[];
}

export const success = (after?: string[]): Outcome => ({ exit: EXIT.ok, after });

export const usageError = (message: string, code = 'usage'): Outcome => ({ exit: EXIT.usage, code, message });

export const toOutcome = (e: CodedError): Outcome => ({ exit: e.exit, code: e.code, message: e.message });
