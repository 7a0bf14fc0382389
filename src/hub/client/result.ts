/**
 * What every Hub call returns. Expected failures are values, never throws: an HTTP
 * error the Hub answered, a network fault, or a body that broke the contract (a buggy
 * or hostile Hub).
 */
export type HubFailure =
  | {
      kind: 'http';
      status: number;
      /** The MA2H error code, or `http_<status>` when the body was not an MA2H error (e.g. a proxy's 502 page). */
      code: string;
      message: string;
      /** Every other key of the error object (`holder`, `state`, …). */
      details: Record<string, unknown>;
      /** `Retry-After` in seconds when the Hub sent a delta-seconds value. */
      retryAfterSeconds: number | null;
    }
  | { kind: 'network'; message: string }
  | { kind: 'protocol'; message: string };

export type HubResult<T> =
  | {
      ok: true;
      status: number;
      value: T;
      /** The Hub's `Date` header, verbatim (its clock, never subtracted from ours). */
      serverDate: string | null;
    }
  | { ok: false; failure: HubFailure };

export const networkFailure = (message: string): HubResult<never> => ({ ok: false, failure: { kind: 'network', message } });
export const protocolFailure = (message: string): HubResult<never> => ({ ok: false, failure: { kind: 'protocol', message } });
