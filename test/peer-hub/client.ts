import { request } from 'node:http';
import { createParser } from 'eventsource-parser';
import { expect } from 'vitest';
import { mac, type Json } from './canonical.js';

/**
 * A bare MA2H wire client for tests that check a Hub against the text: JSON calls, a stream
 * read with a real SSE parser, and the §7 checks on a delivery. It works against any Hub
 * (the peer Hub's self-tests and the differential suite use it).
 */

/** Loosely typed on purpose: these tests assert on raw wire JSON. */
export type Body = { [key: string]: any };

export interface HubTarget {
  url: string;
  signingKey: string;
}

export async function call(
  h: { url: string },
  token: string | null,
  method: string,
  p: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: Body }> {
  const res = await fetch(h.url + p, {
    method,
    headers: { ...(token !== null ? { authorization: `Bearer ${token}` } : {}), 'content-type': 'application/json', ...headers },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, body: (text === '' ? {} : JSON.parse(text)) as Body };
}

export const enc = encodeURIComponent;
export const consumerHeader = (home: string, pid = 1): Record<string, string> => ({ 'ma2h-consumer': `home=${home}; host=h.test; pid=${pid}` });

const SIG = /^t=(\d+),jti=([A-Za-z0-9_-]{16,128}),alg=hmac-sha256,v1=([0-9a-f]{64})$/;

/** The §7 table: exactly the common fields plus the kind's, nothing else. */
const KIND_FIELDS: Record<string, { required: string[]; optional: string[] }> = {
  directive: { required: ['text'], optional: [] },
  message: { required: ['message_id', 'intent', 'text'], optional: ['in_reply_to'] },
  response: { required: ['message_id', 'in_reply_to', 'text'], optional: [] },
  receipt: { required: ['message_id', 'status'], optional: ['prior', 'reason'] },
};

export function expectEntryShape(e: Body): void {
  const spec = KIND_FIELDS[e.kind as string];
  expect(spec, `kind ${e.kind}`).toBeDefined();
  const allowed = new Set(['id', 'kind', 'from', 'to', 'created_at', 'thread_id', ...spec!.required, ...spec!.optional]);
  for (const k of Object.keys(e)) expect(allowed.has(k), `${e.kind} has ${k}`).toBe(true);
  for (const k of ['id', 'kind', 'from', 'to', 'created_at', ...spec!.required]) expect(typeof e[k], `${e.kind}.${k}`).toBe('string');
  expect(e.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
}

/** A delivery's signature syntax, its MAC under the Hub's key, and the entry's shape. */
export function verifyDelivery(h: HubTarget, d: Body): { t: number; jti: string } {
  const m = SIG.exec(d.signature as string);
  expect(m, d.signature).not.toBeNull();
  expect(mac(h.signingKey, Number(m![1]), m![2]!, d.entry as Json)).toBe(m![3]);
  expectEntryShape(d.entry as Body);
  return { t: Number(m![1]), jti: m![2]! };
}

export interface SseRead {
  status: Promise<number>;
  events: { event: string | undefined; data: Body }[];
  comments: string[];
  chunks: Buffer[];
  done: Promise<void>;
  abort(): void;
}

/** A stream read with a real SSE parser over a streaming UTF-8 decoder, keeping the raw chunks. */
export function openSse(h: { url: string }, token: string, pathAndQuery: string, headers: Record<string, string> = {}): SseRead {
  const events: SseRead['events'] = [];
  const comments: string[] = [];
  const chunks: Buffer[] = [];
  let setStatus!: (n: number) => void;
  const status = new Promise<number>((r) => (setStatus = r));
  const parser = createParser({
    onEvent: (e) => events.push({ event: e.event, data: JSON.parse(e.data) as Body }),
    onComment: (c) => comments.push(c),
  });
  const decoder = new TextDecoder('utf-8');
  let req!: ReturnType<typeof request>;
  const done = new Promise<void>((resolve) => {
    req = request(`${h.url}${pathAndQuery}`, { headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream', ...headers } }, (res) => {
      setStatus(res.statusCode ?? 0);
      res.on('data', (b: Buffer) => {
        chunks.push(b);
        parser.feed(decoder.decode(b, { stream: true }));
      });
      res.on('end', () => resolve());
      res.on('close', () => resolve());
    });
    req.on('error', () => resolve());
    req.end();
  });
  return { status, events, comments, chunks, done, abort: () => req.destroy() };
}

export async function registerSession(h: { url: string }, token: string, body: Body = {}): Promise<Body> {
  const r = await call(h, token, 'POST', '/v1/sessions', { client_key: `ck-${Math.random().toString(36).slice(2)}`, ...body });
  expect([200, 201], JSON.stringify(r.body)).toContain(r.status);
  return r.body.session as Body;
}
