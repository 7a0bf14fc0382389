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
import { baseHeaders, describeNetworkError, discard, header, httpFailure, readCapped, type Transport } from './http.js';
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
  let response: Dispatcher.ResponseData;
  try {
    response = await t.dispatcher.request({
      origin: t.origin,
      path: path.value,
      method: 'GET',
      headers,
      signal: opts.signal,
      ...streamTimeouts(opts.capability),
    });
  } catch (e) {
    return { kind: 'failure', failure: { kind: 'network', message: `${where}: ${describeNetworkError(e)}` } };
  }
  const { body, statusCode: status } = response;
  let end: StreamEnd | undefined;
  try {
    if (status < 200 || status > 299)
      return { kind: 'failure', failure: httpFailure(status, (await readCapped(body)).bytes, header(response.headers, 'retry-after')) };
    const type = header(response.headers, 'content-type') ?? '';
    if (status !== 200 || !/^text\/event-stream\b/i.test(type)) {
      return protocolEnd(`${where} answered ${status} ${type || 'without a content-type'}, not 200 text/event-stream`);
    }
    // Not destroyed when the loop leaves at `reconnect`: the rest of the answer is awaited below.
    end = await pump({ [Symbol.asyncIterator]: () => body.iterator({ destroyOnReturn: false }) }, where, header(response.headers, 'date'), opts);
    return end;
  } catch (e) {
    return { kind: 'failure', failure: { kind: 'network', message: `${where}: ${describeNetworkError(e)}` } };
  } finally {
    // After `reconnect` the Hub ends the answer itself, and the reconnect goes out on this
    // connection; a proxy may forward the answer's terminator in a packet after the event's, and
    // destroying the body before it arrives would drop the connection: every reconnect a new one.
    if (end?.kind === 'hold_bound') await bodyEnd(body, STREAM_END_GRACE_MS, opts.signal);
    // Ending on our side (closed, a bad event, a terminator that did not come) drops the connection.
    discard(body);
  }
}

/** Resolves once the body has ended (what follows the last event is read and dropped), or after `ms`. */
function bodyEnd(body: Dispatcher.ResponseData['body'], ms: number, signal: AbortSignal | undefined): Promise<void> {
  if (body.readableEnded || body.destroyed || signal?.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      body.off('end', done).off('close', done).off('error', done);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    body.on('end', done).on('close', done).on('error', done);
    signal?.addEventListener('abort', done);
    body.resume();
  });
}

/** Read events in order, awaiting each handler before the next, until the stream says how it ends. */
async function pump(body: AsyncIterable<unknown>, where: string, serverDate: string | null, opts: StreamOptions): Promise<StreamEnd> {
  const decoder = new SseDecoder();
  for await (const chunk of body) {
    const items = decoder.feed(chunk as Uint8Array);
    if (!items.ok) return protocolEnd(`${where}: ${items.reason}`);
    const end = await dispatch(items.value, where, serverDate, opts);
    if (end) return end;
  }
  const rest = decoder.end();
  if (!rest.ok) return protocolEnd(`${where}: ${rest.reason}`);
  return (await dispatch(rest.value, where, serverDate, opts)) ?? { kind: 'eof' };
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
