import { request, type ClientRequest, type IncomingMessage } from 'node:http';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { waitFor } from '../../helpers/wait.js';

export interface SseEvent {
  event: string;
  data: string;
}

/** A raw SSE connection for tests: every event, comment and byte, parsed by a real (CRLF-tolerant) parser. */
export interface SseConn {
  status: number;
  headers: IncomingMessage['headers'];
  /** The body when the Hub refused the stream (status ≠ 200). */
  errorBody: string;
  events: SseEvent[];
  comments: string[];
  raw(): string;
  ended: Promise<void>;
  isEnded(): boolean;
  /** Wait for the first event (after `from`) matching the predicate. */
  next(match: (e: SseEvent) => boolean, opts?: { timeoutMs?: number; from?: number }): Promise<SseEvent>;
  close(): void;
}

export function openSse(url: string, opts: { token: string; headers?: Record<string, string> }): Promise<SseConn> {
  return new Promise((resolve, reject) => {
    const req: ClientRequest = request(url, {
      headers: { accept: 'text/event-stream', authorization: `Bearer ${opts.token}`, ...opts.headers },
    });
    req.on('error', reject);
    req.on('response', (res) => {
      const events: SseEvent[] = [];
      const comments: string[] = [];
      let raw = '';
      let ended = false;
      const parser = createParser({
        onEvent: (m: EventSourceMessage) => events.push({ event: m.event ?? 'message', data: m.data }),
        onComment: (c: string) => comments.push(c),
      });
      const decoder = new TextDecoder();
      const endedP = new Promise<void>((done) => {
        res.on('data', (chunk: Buffer) => {
          const text = decoder.decode(chunk, { stream: true });
          raw += text;
          if (res.statusCode === 200) parser.feed(text);
        });
        const finish = () => {
          ended = true;
          done();
        };
        res.on('end', finish);
        res.on('close', finish);
        res.on('error', finish);
      });
      const conn: SseConn = {
        status: res.statusCode ?? 0,
        headers: res.headers,
        get errorBody() {
          return res.statusCode === 200 ? '' : raw;
        },
        events,
        comments,
        raw: () => raw,
        ended: endedP,
        isEnded: () => ended,
        next: (match, o = {}) => waitFor(() => events.slice(o.from ?? 0).find(match), { timeoutMs: o.timeoutMs ?? 15_000, what: 'an SSE event' }),
        close: () => req.destroy(),
      };
      if (res.statusCode === 200) resolve(conn);
      else endedP.then(() => resolve(conn), reject);
    });
    req.end();
  });
}
