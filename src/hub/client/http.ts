import type { Dispatcher } from 'undici';
import { maxPageAcceptBytes, parseHubError } from '../contract/index.js';
import { type Result } from '../../core/index.js';
import { networkFailure, protocolFailure, type HubFailure, type HubResult } from './result.js';

/**
 * The largest answer we read: any page the contract allows (a drain answer is one), which always
 * includes one maximal entry (contract/limits.ts). A Hub past it is refused.
 */
export const maxResponseBytes = (): number => maxPageAcceptBytes();

/** Extra time beyond a Hub-side hold before we call a silent connection dead. */
export const HOLD_MARGIN_MS = 10_000;

export interface Transport {
  origin: string;
  dispatcher: Dispatcher;
  token: string | null;
  userAgent: string;
  requestTimeoutMs: number;
}

export interface CallSpec<T> {
  method: 'GET' | 'POST' | 'PATCH';
  /** Absolute path with its query, e.g. `/v1/inbox?session=sess_1`. */
  path: string;
  body?: unknown;
  /** Send the bearer (every endpoint but the capability document). */
  auth: boolean;
  headers?: Record<string, string>;
  /** A server-side hold the request asks for (`?wait=`), added to the header timeout. */
  holdSeconds?: number;
  signal?: AbortSignal;
  parse: (body: unknown) => Result<T>;
}

export function baseHeaders(t: Transport, auth: boolean): Record<string, string> {
  const headers: Record<string, string> = { 'user-agent': t.userAgent };
  // The bearer goes in this header and nowhere else: never a URL, never a log line.
  if (auth && t.token !== null) headers.authorization = `Bearer ${t.token}`;
  return headers;
}

/** Where a request went, without its query (ids only, but kept short for messages). */
export const target = (method: string, path: string): string => `${method} ${path.split('?')[0]}`;

export function describeNetworkError(e: unknown): string {
  if (!(e instanceof Error)) return String(e);
  if (e.name === 'AbortError' || (e as { code?: string }).code === 'UND_ERR_ABORTED') return 'the request was aborted';
  const parts = [e.message];
  // A cause chain that loops (an error made its own cause) is followed once round, not forever.
  const seen = new Set<unknown>([e]);
  let cause: unknown = (e as { cause?: unknown }).cause;
  while (cause instanceof Error && !seen.has(cause)) {
    seen.add(cause);
    if (cause instanceof AggregateError && cause.errors.length > 0) {
      cause = cause.errors[0];
      if (!(cause instanceof Error) || seen.has(cause)) break;
      seen.add(cause);
    }
    if (cause.message && !parts.includes(cause.message)) parts.push(cause.message);
    cause = (cause as { cause?: unknown }).cause;
  }
  const said = parts.join(': ');
  // Node's own messages often carry the code already (`connect ECONNREFUSED 127.0.0.1:9`): name it once.
  const code = (e as { code?: string }).code;
  return code && !said.includes(code) ? `${said} (${code})` : said;
}

export const header = (headers: Dispatcher.ResponseData['headers'], name: string): string | null => {
  const v = headers[name];
  return Array.isArray(v) ? (v[0] ?? null) : (v ?? null);
};

/** `Retry-After` as delta-seconds; an HTTP-date would need our clock against theirs, so it reads as absent. */
export function retryAfterSeconds(v: string | null): number | null {
  if (v === null || !/^\s*\d+\s*$/.test(v)) return null;
  return Number(v.trim());
}

const fatalUtf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Stop reading a body we no longer want; the connection is dropped, not reused. undici
 * reports that as an error on the body, which nobody is left to hear: swallow it.
 */
export function discard(body: Dispatcher.ResponseData['body']): void {
  body.on('error', () => undefined);
  body.destroy();
}

/** Read a body up to maxResponseBytes(); past that it stops reading and says so. */
export async function readCapped(body: Dispatcher.ResponseData['body']): Promise<{ bytes: Buffer; truncated: boolean }> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as Uint8Array);
    size += buf.length;
    if (size > maxResponseBytes()) {
      discard(body);
      return { bytes: Buffer.concat(chunks), truncated: true };
    }
    chunks.push(buf);
  }
  return { bytes: Buffer.concat(chunks), truncated: false };
}

function decodeJson(bytes: Buffer): Result<unknown> {
  let text: string;
  try {
    text = fatalUtf8.decode(bytes);
  } catch {
    return { ok: false, reason: 'the body is not valid UTF-8' };
  }
  if (text.length === 0) return { ok: false, reason: 'the body is empty' };
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch {
    return { ok: false, reason: `the body is not JSON: ${JSON.stringify(text.slice(0, 120))}` };
  }
}

/** Turn a non-2xx answer into an http failure, MA2H error body or not. */
export function httpFailure(status: number, bytes: Buffer, retryAfter: string | null): HubFailure {
  const json = decodeJson(bytes);
  const parsed = json.ok ? parseHubError(json.value) : null;
  if (parsed?.ok) {
    return { kind: 'http', status, ...parsed.value, retryAfterSeconds: retryAfterSeconds(retryAfter) };
  }
  const text = bytes.toString('utf8').replace(/\s+/g, ' ').trim().slice(0, 200);
  return {
    kind: 'http',
    status,
    code: `http_${status}`,
    message: `HTTP ${status} without an MA2H error body${text ? `: ${text}` : ''}`,
    details: {},
    retryAfterSeconds: retryAfterSeconds(retryAfter),
  };
}

export async function call<T>(t: Transport, spec: CallSpec<T>): Promise<HubResult<T>> {
  const where = target(spec.method, spec.path);
  const headers: Record<string, string> = { ...baseHeaders(t, spec.auth), accept: 'application/json', ...spec.headers };
  let payload: string | undefined;
  if (spec.body !== undefined) {
    headers['content-type'] = 'application/json';
    payload = JSON.stringify(spec.body);
  }
  const holdMs = (spec.holdSeconds ?? 0) * 1000;
  let response: Dispatcher.ResponseData;
  let read: { bytes: Buffer; truncated: boolean };
  try {
    response = await t.dispatcher.request({
      origin: t.origin,
      path: spec.path,
      method: spec.method,
      headers,
      body: payload,
      signal: spec.signal,
      headersTimeout: t.requestTimeoutMs + (holdMs > 0 ? holdMs + HOLD_MARGIN_MS : 0),
      bodyTimeout: t.requestTimeoutMs,
    });
    read = await readCapped(response.body);
  } catch (e) {
    return networkFailure(`${where}: ${describeNetworkError(e)}`);
  }
  const { statusCode: status } = response;
  const { bytes } = read;
  if (status < 200 || status > 299) {
    return { ok: false, failure: httpFailure(status, bytes, header(response.headers, 'retry-after')) };
  }
  if (read.truncated) return protocolFailure(`${where}: the response body is over ${maxResponseBytes()} bytes`);
  const json = decodeJson(bytes);
  if (!json.ok) return protocolFailure(`${where} answered ${status} but ${json.reason}`);
  const parsed = spec.parse(json.value);
  if (!parsed.ok) return protocolFailure(`${where} answered ${status} with ${parsed.reason}`);
  return { ok: true, status, value: parsed.value, serverDate: header(response.headers, 'date') };
}
