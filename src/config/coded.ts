import type { CodedError } from '../cli/outcome.js';
import { EXIT } from '../cli/exit-codes.js';

/** A value, or an error that already carries its exit code and the sentence a person needs. */
export type Coded<T> = { ok: true; value: T } | { ok: false; error: CodedError };

export const done = <T>(value: T): Coded<T> => ({ ok: true, value });

export const usageFailure = <T = never>(code: string, message: string): Coded<T> => ({
  ok: false,
  error: { code, message, exit: EXIT.usage },
});

export const authFailure = <T = never>(code: string, message: string): Coded<T> => ({
  ok: false,
  error: { code, message, exit: EXIT.auth },
});
