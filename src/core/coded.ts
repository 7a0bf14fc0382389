import { EXIT } from './exit.js';
import type { Result } from './result.js';

/** An error value with a code and its exit, carried until the edge (the CLI maps it to an Outcome). */
export interface CodedError {
  /** snake_case reason, e.g. `session_lapsed`. */
  code: string;
  /** What was wrong, where, and the fix. */
  message: string;
  exit: number;
}

/** A value, or an error that already carries its exit code and the sentence a person needs. */
export type Coded<T> = Result<T, { error: CodedError }>;

export const done = <T>(value: T): Coded<T> => ({ ok: true, value });

export const usageFailure = <T = never>(code: string, message: string): Coded<T> => ({
  ok: false,
  error: { code, message, exit: EXIT.usage },
});

export const authFailure = <T = never>(code: string, message: string): Coded<T> => ({
  ok: false,
  error: { code, message, exit: EXIT.auth },
});
