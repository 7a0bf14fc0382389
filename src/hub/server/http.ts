import type { Result } from '../../core/index.js';
import type { IncomingMessage, ServerResponse } from 'node:http';

/** A §0 error as a value: `{"error": {"code", "message", ...details}}` with its status. */
export interface ApiError {
  status: number;
  code: string;
  message: string;
  details?: Record<string, unknown>;
  headers?: Record<string, string>;
}

export type ErrorReply = { kind: 'error'; error: ApiError };

export type Reply =
  | { kind: 'json'; status: number; body: unknown }
  | ErrorReply
  /** The handler wrote the response itself (an SSE stream). */
  | { kind: 'handled' };

/** A service answer: the value, or the §0 error to send. */
export type Answer<T> = Result<T, { error: ApiError }>;

export const good = <T>(value: T): Answer<T> => ({ ok: true, value });
export const bad = <T = never>(status: number, code: string, message: string, details?: Record<string, unknown>): Answer<T> => ({
  ok: false,
  error: { status, code, message, ...(details ? { details } : {}) },
});

export const json = (status: number, body: unknown): Reply => ({ kind: 'json', status, body });
export const errorReply = (error: ApiError): ErrorReply => ({ kind: 'error', error });
export const fault = (status: number, code: string, message: string, details?: Record<string, unknown>): ErrorReply =>
  errorReply({ status, code, message, ...(details ? { details } : {}) });

/** Turn a service answer into a reply. */
export function answer<T>(a: Answer<T>, status: number, body: (v: T) => unknown): Reply {
  return a.ok ? json(status, body(a.value)) : errorReply(a.error);
}

export function errorBody(e: ApiError): unknown {
  return { error: { ...(e.details ?? {}), code: e.code, message: e.message } };
}

export function send(res: ServerResponse, reply: Exclude<Reply, { kind: 'handled' }>): void {
  if (res.headersSent || res.destroyed) return;
  const status = reply.kind === 'json' ? reply.status : reply.error.status;
  const payload = JSON.stringify(reply.kind === 'json' ? reply.body : errorBody(reply.error));
  const headers = reply.kind === 'json' ? undefined : reply.error.headers;
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(payload),
    'cache-control': 'no-store',
    ...headers,
  });
  res.end(payload);
}

const fatalUtf8 = new TextDecoder('utf-8', { fatal: true });

export type Body = { kind: 'none' } | { kind: 'json'; value: unknown };

/**
 * Read a request body, refusing more than `cap` bytes (413) and anything that is not
 * UTF-8 JSON (400). An empty body is `none`, which endpoints without a body accept.
 */
export function readBody(req: IncomingMessage, cap: number): Promise<Answer<Body>> {
  return new Promise((resolve) => {
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > cap) {
      req.resume();
      resolve(tooLarge(cap));
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    req.on('data', (chunk: Buffer) => {
      if (done) return;
      size += chunk.length;
      if (size > cap) {
        done = true;
        resolve(tooLarge(cap));
        return;
      }
      chunks.push(chunk);
    });
    req.on('error', () => {
      if (done) return;
      done = true;
      resolve(bad(400, 'invalid_request', 'the request body could not be read'));
    });
    req.on('end', () => {
      if (done) return;
      done = true;
      let text: string;
      try {
        text = fatalUtf8.decode(Buffer.concat(chunks));
      } catch {
        // Never repaired to U+FFFD: the sender's copy and the recipient's would differ.
        resolve(bad(400, 'invalid_request', 'the request body is not valid UTF-8; send the JSON encoded as UTF-8'));
        return;
      }
      if (text.trim() === '') {
        resolve(good({ kind: 'none' }));
        return;
      }
      try {
        resolve(good({ kind: 'json', value: JSON.parse(text) as unknown }));
      } catch (e) {
        resolve(bad(400, 'invalid_request', `the request body is not valid JSON: ${(e as Error).message}`));
      }
    });
  });
}

function tooLarge(cap: number): Answer<Body> {
  return {
    ok: false,
    error: {
      status: 413,
      code: 'payload_too_large',
      message: `the request body is over the Hub's limit of ${cap} bytes`,
      details: { limit_bytes: cap },
      headers: { connection: 'close' },
    },
  };
}
