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
 * How much of a refused body the Hub still reads and drops before answering 413. Most clients
 * (fetch among them) write the whole request before they read the answer: a 413 sent while
 * they are still writing, followed by the close, reaches them as a broken pipe instead of the
 * refusal. Past this many bytes the Hub answers at once and closes, as nginx's lingering close
 * does, so a client cannot make it read without end.
 */
const LINGER_BYTES = 16 * 1024 * 1024;

/**
 * Read a request body, refusing more than `cap` bytes (413) and anything that is not
 * UTF-8 JSON (400). An empty body is `none`, which endpoints without a body accept.
 */
export function readBody(req: IncomingMessage, cap: number): Promise<Answer<Body>> {
  return new Promise((resolve) => {
    const declared = Number(req.headers['content-length']);
    const chunks: Buffer[] = [];
    let size = 0;
    let over = Number.isFinite(declared) && declared > cap;
    let done = false;
    const finish = (answer: Answer<Body>): void => {
      if (done) return;
      done = true;
      resolve(answer);
    };
    if (over && declared > cap + LINGER_BYTES) {
      req.resume();
      finish(tooLarge(cap));
      return;
    }
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (!over && size > cap) over = true;
      if (over) {
        if (size > cap + LINGER_BYTES) finish(tooLarge(cap));
        return;
      }
      chunks.push(chunk);
    });
    req.on('error', () => finish(over ? tooLarge(cap) : bad(400, 'invalid_request', 'the request body could not be read')));
    req.on('end', () => {
      if (over) {
        finish(tooLarge(cap));
        return;
      }
      let text: string;
      try {
        text = fatalUtf8.decode(Buffer.concat(chunks));
      } catch {
        // Never repaired to U+FFFD: the sender's copy and the recipient's would differ.
        finish(bad(400, 'invalid_request', 'the request body is not valid UTF-8; send the JSON encoded as UTF-8'));
        return;
      }
      if (text.trim() === '') {
        finish(good({ kind: 'none' }));
        return;
      }
      try {
        finish(good({ kind: 'json', value: JSON.parse(text) as unknown }));
      } catch (e) {
        finish(bad(400, 'invalid_request', `the request body is not valid JSON: ${(e as Error).message}`));
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
