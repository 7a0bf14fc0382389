import type { Dispatcher } from 'undici';
import {
  CONSUMER_HEADER,
  formatConsumerHeader,
  parseClosedEvent,
  parseEntriesEvent,
  parseOpenEvent,
  parseReconnectEvent,
  type Capability,
  type ClosedEvent,
  type ClosedReason,
  type ConsumerIdentity,
  type EntriesEvent,
  type OpenEvent,
  type ReconnectEvent,
} from '../contract/index.js';
import { type Result } from '../../core/index.js';
import { baseHeaders, describeNetworkError, header, httpFailure, maxResponseBytes, type Transport } from './http.js';
import type { HubFailure } from './result.js';
import { SseDecoder, type SseItem } from './sse-decoder.js';
import { STREAM_END_GRACE_MS, streamTimeouts } from './timeouts.js';

export const DEFAULT_STREAM_PATH = '/v1/inbox/stream';

type Handler<E> = ((event: E) => void | Promise<void>) | undefined;

export interface StreamOptions {
  signal?: AbortSignal;
  /** The Hub's capability: its stream_url, hold bound and keep-alive set the URL and timeouts. */
  capability?: Capability | null;
  consumer?: ConsumerIdentity | null;
  /** The stream is open; `serverDate` is the Hub's Date header, verbatim. */
  onOpen?: (event: OpenEvent, serverDate: string | null) => void | Promise<void>;
  onEntries?: Handler<EntriesEvent>;
  onClosed?: Handler<ClosedEvent>;
  onReconnect?: Handler<ReconnectEvent>;
  onComment?: Handler<string>;
}

/**
 * How a stream ended. `hold_bound` is the normal end of every hold: reconnect at once,
 * without spending the retry budget. `eof` is a close with neither `reconnect` nor
 * `closed` (a dropped connection or a restarting Hub).
 */
export type StreamEnd = { kind: 'hold_bound' } | { kind: 'closed'; reason: ClosedReason } | { kind: 'eof' } | { kind: 'failure'; failure: HubFailure };

const protocolEnd = (message: string): StreamEnd => ({ kind: 'failure', failure: { kind: 'protocol', message } });

/** The stream path with `session=` set, refusing a stream_url on another origin (the bearer goes only to the Hub). */
export function streamPath(origin: string, sessionId: string, cap: Capability | null | undefined): Result<string> {
  const advertised = cap?.inbound.stream_url ?? DEFAULT_STREAM_PATH;
  let url: URL;
  try {
    url = new URL(advertised, origin);
  } catch {
    return { ok: false, reason: `inbound.stream_url ${JSON.stringify(advertised)} is not a URL` };
  }
  if (url.origin !== new URL(origin).origin) {
    return {
      ok: false,
      reason: `inbound.stream_url ${JSON.stringify(advertised)} points at another origin than the Hub (${origin}); the credential is only sent to the Hub`,
    };
  }
  url.searchParams.set('session', sessionId);
  return { ok: true, value: `${url.pathname}${url.search}` };
}

export async function openStream(t: Transport, sessionId: string, opts: StreamOptions): Promise<StreamEnd> {
  const path = streamPath(t.origin, sessionId, opts.capability);
  if (!path.ok) return protocolEnd(path.reason);
  const where = `GET ${path.value.split('?')[0]}`;
  const headers: Record<string, string> = { ...baseHeaders(t, true), accept: 'text/event-stream', 'cache-control': 'no-cache' };
  if (opts.consumer) headers[CONSUMER_HEADER.toLowerCase()] = formatConsumerHeader(opts.consumer);
  const reader = new StreamReader(where, opts);
  t.dispatcher.dispatch({ origin: t.origin, path: path.value, method: 'GET', headers, ...streamTimeouts(opts.capability) }, reader);
  return reader.ended;
}

/**
 * The stream read through undici's dispatch handler: each chunk comes to `onResponseData` and is
 * decoded there, with no Readable and no async iterator between the socket and the events (the
 * connection, TLS and undici's header and body timeouts are the request API's, which is built on
 * the same call). The events of a chunk are handled in order, each awaited before the next, and
 * the socket is paused while they are (backpressure); a chunk that completes no event costs no
 * await at all.
 */
class StreamReader implements Dispatcher.DispatchHandler {
  readonly ended: Promise<StreamEnd>;
  private settle!: (end: StreamEnd) => void;
  private controller: Dispatcher.DispatchController | null = null;
  private readonly decoder = new SseDecoder();
  private serverDate: string | null = null;
  /** A non-2xx answer's body, read up to maxResponseBytes() for its MA2H error. */
  private errorBody: { status: number; retryAfter: string | null; chunks: Buffer[]; size: number } | null = null;
  /** Chunks that came while an earlier chunk's events were being handled. */
  private readonly queue: Buffer[] = [];
  private handling = false;
  private bodyDone = false;
  /** A failure of the connection that came while events were being handled: reported after them. */
  private failed: unknown = null;
  /** `reconnect` ended the stream: the rest of the answer is read and dropped until its end. */
  private draining: ReturnType<typeof setTimeout> | null = null;
  private done = false;
  private readonly unlisten: () => void;

  constructor(
    private readonly where: string,
    private readonly opts: StreamOptions,
  ) {
    this.ended = new Promise((resolve) => (this.settle = resolve));
    const signal = opts.signal;
    const onAbort = () => this.aborted();
    signal?.addEventListener('abort', onAbort);
    this.unlisten = () => signal?.removeEventListener('abort', onAbort);
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.opts.signal?.aborted) this.aborted();
  }

  onResponseStart(controller: Dispatcher.DispatchController, status: number, headers: Dispatcher.ResponseData['headers']): void {
    if (status < 200 || this.done) return;
    if (status > 299) {
      this.errorBody = { status, retryAfter: header(headers, 'retry-after'), chunks: [], size: 0 };
      return;
    }
    const type = header(headers, 'content-type') ?? '';
    if (status !== 200 || !/^text\/event-stream\b/i.test(type)) {
      this.end(protocolEnd(`${this.where} answered ${status} ${type || 'without a content-type'}, not 200 text/event-stream`));
      return;
    }
    this.serverDate = header(headers, 'date');
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.done || this.draining !== null) return;
    const error = this.errorBody;
    if (error !== null) {
      error.size += chunk.length;
      if (error.size > maxResponseBytes()) {
        this.end({ kind: 'failure', failure: httpFailure(error.status, Buffer.concat(error.chunks), error.retryAfter) });
      } else error.chunks.push(chunk);
      return;
    }
    if (this.handling) {
      this.queue.push(chunk);
      controller.pause();
      return;
    }
    this.handle(chunk);
  }

  onResponseEnd(): void {
    this.bodyDone = true;
    if (this.done) return;
    if (this.draining !== null) {
      this.end({ kind: 'hold_bound' });
      return;
    }
    const error = this.errorBody;
    if (error !== null) {
      this.end({ kind: 'failure', failure: httpFailure(error.status, Buffer.concat(error.chunks), error.retryAfter) });
      return;
    }
    if (!this.handling) this.finish();
  }

  onResponseError(_controller: Dispatcher.DispatchController, e: Error): void {
    this.bodyDone = true;
    if (this.done) return;
    // A connection lost while the rest of a held answer was awaited costs only its reuse.
    if (this.draining !== null) this.end({ kind: 'hold_bound' });
    else if (this.handling) {
      this.failed = e;
      this.queue.length = 0;
    } else this.end(this.networkEnd(e));
  }

  private aborted(): void {
    const reason: unknown = this.opts.signal?.reason;
    const error = reason instanceof Error ? reason : new Error(String(reason));
    if (this.draining !== null) this.end({ kind: 'hold_bound' });
    else this.controller?.abort(error);
  }

  private networkEnd(e: unknown): StreamEnd {
    return { kind: 'failure', failure: { kind: 'network', message: `${this.where}: ${describeNetworkError(e)}` } };
  }

  /** One chunk's events; what came meanwhile after them, then the stream's end if it came. */
  private handle(chunk: Buffer): void {
    const items = this.decoder.feed(chunk);
    if (!items.ok) {
      this.end(protocolEnd(`${this.where}: ${items.reason}`));
      return;
    }
    if (items.value.length === 0) return;
    this.handling = true;
    dispatch(items.value, this.where, this.serverDate, this.opts).then(
      (end) => this.handled(end),
      (e: unknown) => this.handled(this.networkEnd(e)),
    );
  }

  private handled(end: StreamEnd | null): void {
    if (this.done) return;
    this.handling = false;
    if (end !== null) {
      this.eventEnded(end);
      return;
    }
    if (this.failed !== null) {
      this.end(this.networkEnd(this.failed));
      return;
    }
    while (!this.handling && !this.done) {
      const next = this.queue.shift();
      if (next === undefined) break;
      this.handle(next);
    }
    if (this.handling || this.done) return;
    if (this.bodyDone) this.finish();
    else this.controller?.resume();
  }

  /** The answer ended: flush the decoder; an answer that ends without `reconnect` or `closed` is an eof. */
  private finish(): void {
    const rest = this.decoder.end();
    if (!rest.ok) {
      this.end(protocolEnd(`${this.where}: ${rest.reason}`));
      return;
    }
    this.handling = true;
    dispatch(rest.value, this.where, this.serverDate, this.opts).then(
      (end) => this.end(end ?? { kind: 'eof' }),
      (e: unknown) => this.end(this.networkEnd(e)),
    );
  }

  /** An event ended the stream. */
  private eventEnded(end: StreamEnd): void {
    // After `reconnect` the Hub ends the answer itself, and the reconnect goes out on this
    // connection; a proxy may forward the answer's terminator in a packet after the event's, and
    // dropping the connection before it arrives would make every reconnect a new one.
    if (end.kind !== 'hold_bound' || this.bodyDone || this.opts.signal?.aborted) {
      this.end(end);
      return;
    }
    this.queue.length = 0;
    this.draining = setTimeout(() => this.end(end), STREAM_END_GRACE_MS);
    this.controller?.resume();
  }

  /** Settle once. Ending on our side before the answer's end (closed, a bad event, a terminator that did not come) drops the connection. */
  private end(end: StreamEnd): void {
    if (this.done) return;
    this.done = true;
    this.handling = false;
    this.queue.length = 0;
    if (this.draining !== null) clearTimeout(this.draining);
    this.unlisten();
    if (!this.bodyDone) {
      this.bodyDone = true;
      this.controller?.abort(new Error(`the client ended the stream (${end.kind})`));
    }
    this.settle(end);
  }
}

async function dispatch(items: SseItem[], where: string, serverDate: string | null, opts: StreamOptions): Promise<StreamEnd | null> {
  for (const item of items) {
    if (item.kind === 'comment') {
      await opts.onComment?.(item.text);
      continue;
    }
    const parse = PARSERS[item.event ?? ''];
    // Events MA2H does not name (and unnamed ones) are ignored: forward compatibility.
    if (!parse) continue;
    let json: unknown;
    try {
      json = JSON.parse(item.data);
    } catch {
      return protocolEnd(`${where}: event ${item.event} carries data that is not JSON: ${JSON.stringify(item.data.slice(0, 120))}`);
    }
    const end = await parse(json, serverDate, opts);
    if (end === null) continue;
    return typeof end === 'string' ? protocolEnd(`${where}: ${end}`) : end;
  }
  return null;
}

/** Per event name: handle it, and say whether it ends the stream (or why it is malformed). */
const PARSERS: Record<string, (json: unknown, serverDate: string | null, opts: StreamOptions) => Promise<StreamEnd | string | null>> = {
  open: async (json, serverDate, opts) => {
    const e = parseOpenEvent(json);
    if (!e.ok) return e.reason;
    await opts.onOpen?.(e.value, serverDate);
    return null;
  },
  entries: async (json, _date, opts) => {
    const e = parseEntriesEvent(json);
    if (!e.ok) return e.reason;
    await opts.onEntries?.(e.value);
    return null;
  },
  closed: async (json, _date, opts) => {
    const e = parseClosedEvent(json);
    if (!e.ok) return e.reason;
    await opts.onClosed?.(e.value);
    return { kind: 'closed', reason: e.value.reason };
  },
  reconnect: async (json, _date, opts) => {
    const e = parseReconnectEvent(json);
    if (!e.ok) return e.reason;
    await opts.onReconnect?.(e.value);
    // hold_bound is the only free reconnect. A Hub that is stopping says `shutdown`: a fault to
    // back off from (its port is about to close), told apart from a dropped connection in the log.
    if (e.value.reason === 'hold_bound') return { kind: 'hold_bound' };
    if (e.value.reason === 'shutdown')
      return { kind: 'failure', failure: { kind: 'network', message: 'the Hub is shutting down (event: reconnect {"reason":"shutdown"})' } };
    return `reconnect event with unknown reason "${e.value.reason}"`;
  },
};
