/**
 * The one shape of "a value, or why not". `E` is what a failure carries beside `ok: false`:
 * by default a sentence a person can read (validators, loaders); `{ error: CodedError }` for
 * errors that already know their exit code (`Coded<T>`); a `code` and a `reason` where the
 * caller branches on the kind of failure (`openStateDir`). Never a bare boolean.
 */
export type Result<T, E extends object = { reason: string }> = { ok: true; value: T } | ({ ok: false } & E);

export const ok = <T>(value: T): Result<T, never> => ({ ok: true, value });
export const fail = <T = never>(reason: string): Result<T> => ({ ok: false, reason });
