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

/**
 * A 404 or 410 that names no resource: the Hub's own `not_found` (no such endpoint), or an
 * answer without an MA2H body (a web server or proxy at that URL). No id is wrong, the URL is.
 */
export const noSuchEndpoint = (f: HubFailure): boolean =>
  f.kind === 'http' && (f.code === 'not_found' || ((f.status === 404 || f.status === 410) && f.code === `http_${f.status}`));

/** What to do about {@link noSuchEndpoint}: re-running the same URL cannot help. */
export const CHECK_HUB_URL =
  'it is not an MA2H Hub, or a proxy in front of it does not pass /v1/ through; check the Hub URL (--hub, MA2H_HUB_URL or [hub] url) with `oh-hai doctor`';
