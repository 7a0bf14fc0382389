import { describe, expect, it } from 'vitest';
import type { Dispatcher } from 'undici';
import { HubClient, SseDecoder, streamTimeouts, type StreamEnd } from '../../../src/hub/client/index.js';
import { openStream } from '../../../src/hub/client/stream.js';
import { Client } from '../../../src/hub/client/undici.js';
import { checkCapability, type Capability, type OpenEvent } from '../../../src/hub/contract/index.js';
import { waitFor } from '../../helpers/wait.js';
import { json, sseHead, startPeer, usePeerClient, writeChunk, type Peer, type PeerHandler } from './peer.js';

const at = '2026-09-18T14:33:07.000Z';
const open = { session: 'sess_1', expires_at: at, lease_seconds: 900, hold_ms: 30000, stream_max_hold_seconds: 30 };
const entry = (text: string) => ({
  entry: { id: 'ent_1', kind: 'directive', from: 'human:acct_1', to: 'agent:agt_1#sess_1', created_at: at, text },
  signature: `t=1,jti=jti_AbCdEfGhIjKlMnOpQr,alg=hmac-sha256,v1=${'a'.repeat(64)}`,
});

const peerClient = usePeerClient();

interface Seen {
  peer: Peer;
  client: HubClient;
  end: StreamEnd;
  log: string[];
  opens: OpenEvent[];
  entries: unknown[][];
  comments: string[];
}

async function stream(write: PeerHandler, opts: { capability?: Capability } = {}): Promise<Seen> {
  const { peer, client } = await peerClient(write, { token: 'tok_secret', consumer: { home: 'home1', host: 'box', pid: 77 } });
  const seen: Omit<Seen, 'end'> = { peer, client, log: [], opens: [], entries: [], comments: [] };
  const end = await client.openStream('sess_1', {
    ...opts,
    onOpen: (e) => {
      seen.log.push('open');
      seen.opens.push(e);
    },
    onEntries: async (e) => {
      // An async handler is awaited before the next event: order is kept under back-pressure.
      await new Promise((r) => setImmediate(r));
      seen.log.push('entries');
      seen.entries.push(e.messages);
    },
    onComment: (c) => {
      seen.log.push('comment');
      seen.comments.push(c);
    },
    onReconnect: (e) => {
      seen.log.push(`reconnect:${e.reason}`);
    },
    onClosed: (e) => {
      seen.log.push(`closed:${e.reason}`);
    },
  });
  return { end, ...seen };
}

describe('openStream framing over a real socket', () => {
  it('CRLF line ends, a comment, multi-line data, U+2028 inside JSON, then the hold bound', async () => {
    const text = 'one\u2028two\u2029three';
    const entries = JSON.stringify({ messages: [entry(text)] });
    const cut = entries.indexOf('"messages"') + 11;
    const s = await stream(async (_req, res) => {
      sseHead(res);
      await writeChunk(res, `event: open\r\ndata: ${JSON.stringify(open)}\r\n\r\n`);
      await writeChunk(res, ': keepalive\r\n\r\n');
      // One JSON document over two data lines: the parser joins them with \n.
      await writeChunk(res, `event: entries\r\ndata: ${entries.slice(0, cut)}\r\ndata: ${entries.slice(cut)}\r\n\r\n`);
      await writeChunk(res, 'event: reconnect\r\ndata: {"reason":"hold_bound"}\r\n\r\n');
      res.end();
    });
    expect(s.end).toEqual({ kind: 'hold_bound' });
    expect(s.log).toEqual(['open', 'comment', 'entries', 'reconnect:hold_bound']);
    expect(s.opens[0]).toEqual(open);
    expect(s.comments).toEqual(['keepalive']);
    expect(s.entries[0]).toEqual([entry(text)]);
    const req = s.peer.requests[0]!;
    expect(req.url).toBe('/v1/inbox/stream?session=sess_1');
    expect(req.headers.accept).toBe('text/event-stream');
    expect(req.headers.authorization).toBe('Bearer tok_secret');
    expect(req.headers['ma2h-consumer']).toBe('home=home1; host=box; pid=77');
    expect(req.url).not.toContain('tok_secret');
  });

  it('a BOM and CR-only line ends do not eat the first event; closed ends the stream with its reason', async () => {
    const s = await stream(async (_req, res) => {
      sseHead(res);
      await writeChunk(res, Buffer.from([0xef, 0xbb, 0xbf]));
      await writeChunk(res, `event: open\rdata: ${JSON.stringify(open)}\r\r`);
      await writeChunk(res, 'event: closed\rdata: {"reason":"closed_by_operator"}\r\r');
      // Anything after `closed` is not read.
      await writeChunk(res, `event: entries\rdata: ${JSON.stringify({ messages: [entry('late')] })}\r\r`);
      res.end();
    });
    expect(s.end).toEqual({ kind: 'closed', reason: 'closed_by_operator' });
    expect(s.log).toEqual(['open', 'closed:closed_by_operator']);
  });

  it('multi-byte characters split across writes arrive whole', async () => {
    const text = 'café 😀 ü';
    const bytes = Buffer.from(`event: entries\ndata: ${JSON.stringify({ messages: [entry(text)] })}\n\n`, 'utf8');
    const e = bytes.indexOf(Buffer.from('é'));
    const emoji = bytes.indexOf(Buffer.from('😀'));
    const s = await stream(async (_req, res) => {
      sseHead(res);
      await writeChunk(res, `event: open\ndata: ${JSON.stringify(open)}\n\n`);
      for (const [from, to] of [
        [0, e + 1],
        [e + 1, emoji + 2],
        [emoji + 2, emoji + 3],
        [emoji + 3, bytes.length],
      ] as const) {
        await writeChunk(res, bytes.subarray(from, to));
        await new Promise((r) => setImmediate(r));
      }
      await writeChunk(res, 'event: reconnect\ndata: {"reason":"hold_bound"}\n\n');
      res.end();
    });
    expect(s.end).toEqual({ kind: 'hold_bound' });
    expect(s.entries).toEqual([[entry(text)]]);
  });

  it('events MA2H does not name, unnamed events and unknown fields are ignored', async () => {
    const s = await stream(async (_req, res) => {
      sseHead(res);
      await writeChunk(res, `id: 5\nretry: 100\nfoo: bar\nevent: open\ndata: ${JSON.stringify(open)}\n\n`);
      await writeChunk(res, 'data: {"unnamed":true}\n\nevent: future\ndata: not even json\n\n');
      res.end();
    });
    expect(s.end).toEqual({ kind: 'eof' });
    expect(s.log).toEqual(['open']);
  });

  it('a close without reconnect or closed is eof, even mid-event', async () => {
    const s = await stream(async (_req, res) => {
      sseHead(res);
      await writeChunk(res, `event: open\ndata: ${JSON.stringify(open)}\n\nevent: entries\ndata: {"messages":[]}`);
      res.end();
    });
    expect(s.end).toEqual({ kind: 'eof' });
    expect(s.log).toEqual(['open']);
  });

  it.each([
    ['malformed open data', `event: open\ndata: {"session":"sess_1"}\n\n`, "open event: data is missing required field 'expires_at'"],
    ['data that is not JSON', 'event: entries\ndata: {messages\n\n', 'event entries carries data that is not JSON'],
    ['entries without messages', 'event: entries\ndata: {}\n\n', "entries event: data is missing required field 'messages'"],
    ['a reconnect for a reason MA2H does not name', 'event: reconnect\ndata: {"reason":"nap"}\n\n', 'reconnect event with unknown reason "nap"'],
    ['a closed event with an unknown reason', 'event: closed\ndata: {"reason":"bored"}\n\n', 'closed event: data field \'reason\' is "bored"'],
  ])('%s is a protocol failure', async (_name, body, fragment) => {
    const s = await stream(async (_req, res) => {
      sseHead(res);
      await writeChunk(res, body);
      res.end();
    });
    expect(s.end.kind).toBe('failure');
    if (s.end.kind !== 'failure') return;
    expect(s.end.failure.kind).toBe('protocol');
    expect(s.end.failure.message).toContain(fragment);
  });

  it('a stopping Hub\'s reconnect {"reason":"shutdown"} is a fault to back off from, saying the Hub is shutting down', async () => {
    const s = await stream(async (_req, res) => {
      sseHead(res);
      await writeChunk(res, `event: open\ndata: ${JSON.stringify(open)}\n\nevent: reconnect\ndata: {"reason":"shutdown"}\n\n`);
      res.end();
    });
    expect(s.log).toEqual(['open', 'reconnect:shutdown']);
    expect(s.end).toEqual({ kind: 'failure', failure: { kind: 'network', message: 'the Hub is shutting down (event: reconnect {"reason":"shutdown"})' } });
  });

  it('bytes that are not UTF-8 are a protocol failure, not replacement characters', async () => {
    const s = await stream(async (_req, res) => {
      sseHead(res);
      await writeChunk(res, Buffer.concat([Buffer.from('event: entries\ndata: {"messages":["'), Buffer.from([0xc3, 0x28]), Buffer.from('"]}\n\n')]));
      res.end();
    });
    expect(s.end).toMatchObject({ kind: 'failure', failure: { kind: 'protocol', message: expect.stringContaining('not valid UTF-8') } });
    expect(s.entries).toEqual([]);
  });

  it('an error before the stream starts is the JSON error of §4, with details and Retry-After', async () => {
    const holder = { home: 'other', host: 'h2', pid: 9, since: at, last_seen_at: at };
    const s = await stream((_req, res) => json(res, 409, { error: { code: 'session_held', message: 'held elsewhere', holder } }, { 'retry-after': '7' }));
    expect(s.end).toEqual({
      kind: 'failure',
      failure: { kind: 'http', status: 409, code: 'session_held', message: 'held elsewhere', details: { holder }, retryAfterSeconds: 7 },
    });
  });

  it('a 200 that is not an event stream is a protocol failure', async () => {
    const s = await stream((_req, res) => json(res, 200, { messages: [] }));
    expect(s.end).toMatchObject({ kind: 'failure', failure: { kind: 'protocol', message: expect.stringContaining('not 200 text/event-stream') } });
  });

  it('aborting a held stream ends it as a network failure and drops the connection', async () => {
    let closed = false;
    const { client } = await peerClient(
      async (_req, res) => {
        res.on('close', () => (closed = true));
        sseHead(res);
        await writeChunk(res, `event: open\ndata: ${JSON.stringify(open)}\n\n`);
      },
      { token: 't' },
    );
    const ac = new AbortController();
    const end = await client.openStream('sess_1', { signal: ac.signal, onOpen: () => ac.abort() });
    expect(end).toMatchObject({ kind: 'failure', failure: { kind: 'network', message: expect.stringContaining('aborted') } });
    await waitFor(() => closed, { what: 'the peer to see its socket closed' });
  });

  it("reads the answer through the dispatcher's dispatch alone: no request API, no Readable body in between", async () => {
    const peer = await startPeer(async (_req, res) => {
      sseHead(res);
      await writeChunk(res, `event: open\ndata: ${JSON.stringify(open)}\n\n`);
      await writeChunk(res, `event: entries\ndata: ${JSON.stringify({ messages: [entry('one')] })}\n\n`);
      await writeChunk(res, 'event: reconnect\ndata: {"reason":"hold_bound"}\n\n');
      res.end();
    });
    const client = new Client(peer.url);
    try {
      // Only `dispatch`: a stream read through `request()` finds no such method here.
      const dispatcher = { dispatch: client.dispatch.bind(client) } as unknown as Dispatcher;
      const t = { origin: peer.url, dispatcher, token: 't', userAgent: 'test', requestTimeoutMs: 5000 };
      const got: unknown[] = [];
      const end = await openStream(t, 'sess_1', { onEntries: (e) => void got.push(...e.messages) });
      expect(end).toEqual({ kind: 'hold_bound' });
      expect(got).toEqual([entry('one')]);
    } finally {
      await client.close();
      await peer.close();
    }
  });

  it('a slow handler holds the events after it, in order, none lost, whatever the chunks', async () => {
    const n = 60;
    const s = await stream(async (_req, res) => {
      sseHead(res);
      await writeChunk(res, `event: open\ndata: ${JSON.stringify(open)}\n\n`);
      // Some events alone, some several to a chunk, some split across two.
      let pending = '';
      for (let i = 0; i < n; i++) {
        pending += `event: entries\ndata: ${JSON.stringify({ messages: [entry(`m${i}`)] })}\n\n`;
        if (i % 3 === 2) continue;
        const cut = i % 3 === 1 ? Math.floor(pending.length / 2) : pending.length;
        await writeChunk(res, pending.slice(0, cut));
        pending = pending.slice(cut);
      }
      await writeChunk(res, `${pending}event: reconnect\ndata: {"reason":"hold_bound"}\n\n`);
      res.end();
    });
    expect(s.end).toEqual({ kind: 'hold_bound' });
    expect(s.entries.map((m) => (m[0] as { entry: { text: string } }).entry.text)).toEqual(Array.from({ length: n }, (_v, i) => `m${i}`));
  });

  it("after reconnect the answer's terminator is awaited, so the next stream goes out on the same connection", async () => {
    const ports: (number | undefined)[] = [];
    const { client } = await peerClient(
      async (_req, res) => {
        ports.push(res.socket?.remotePort);
        sseHead(res);
        await writeChunk(res, `event: open\ndata: ${JSON.stringify(open)}\n\nevent: reconnect\ndata: {"reason":"hold_bound"}\n\n`);
        // The terminator in a later packet, as a proxy may forward it.
        await new Promise((r) => setImmediate(r));
        res.end();
      },
      { token: 't' },
    );
    expect(await client.openStream('sess_1')).toEqual({ kind: 'hold_bound' });
    expect(await client.openStream('sess_1')).toEqual({ kind: 'hold_bound' });
    expect(ports).toHaveLength(2);
    expect(ports[1]).toBe(ports[0]);
  });

  it('after reconnect a terminator that does not come costs the connection, not the hold_bound', async () => {
    let closed = false;
    const { client } = await peerClient(
      async (_req, res) => {
        res.on('close', () => (closed = true));
        sseHead(res);
        await writeChunk(res, `event: open\ndata: ${JSON.stringify(open)}\n\nevent: reconnect\ndata: {"reason":"hold_bound"}\n\n`);
      },
      { token: 't' },
    );
    expect(await client.openStream('sess_1')).toEqual({ kind: 'hold_bound' });
    await waitFor(() => closed, { what: 'the peer to see its socket closed' });
  });

  it('uses the advertised stream_url on the Hub and refuses one on another origin without sending anything', async () => {
    const cap = (url: string): Capability => {
      const r = checkCapability({ protocol: 'MA2H', version: '0.5.0', inbound: { session_param: true, stream_url: url } });
      if (!r.ok) throw new Error(r.reason);
      return r.value;
    };
    const s = await stream(
      async (_req, res) => {
        sseHead(res);
        await writeChunk(res, 'event: reconnect\ndata: {"reason":"hold_bound"}\n\n');
        res.end();
      },
      { capability: cap('/hub/stream?v=1') },
    );
    expect(s.end).toEqual({ kind: 'hold_bound' });
    expect(s.peer.requests[0]!.url).toBe('/hub/stream?v=1&session=sess_1');
    const elsewhere = await s.client.openStream('sess_1', { capability: cap('http://127.0.0.2:9/v1/inbox/stream') });
    expect(elsewhere).toMatchObject({ kind: 'failure', failure: { kind: 'protocol', message: expect.stringContaining('another origin') } });
    expect(s.peer.requests).toHaveLength(1);
  });
});

describe('SseDecoder (exact chunk boundaries)', () => {
  const events = (d: SseDecoder, chunks: Uint8Array[]) => {
    const out: unknown[] = [];
    for (const c of chunks) {
      const r = d.feed(c);
      if (!r.ok) throw new Error(r.reason);
      out.push(...r.value);
    }
    const r = d.end();
    if (!r.ok) throw new Error(r.reason);
    return [...out, ...r.value];
  };
  const bytes = (s: string) => Buffer.from(s, 'utf8');

  it('splits every byte apart, CRLF straddling chunks included', () => {
    const all = bytes('\ufeffevent: open\r\ndata: {"t":"é😀\u2028"}\r\n\r\n: ka\r\n\r\n');
    const chunks = [...all].map((b) => Uint8Array.of(b));
    expect(events(new SseDecoder(), chunks)).toEqual([
      { kind: 'event', event: 'open', data: '{"t":"é😀\u2028"}' },
      { kind: 'comment', text: 'ka' },
    ]);
  });

  it('a BOM split across chunks is still dropped', () => {
    const all = bytes('\ufeffevent: x\ndata: 1\n\n');
    expect(events(new SseDecoder(), [all.subarray(0, 1), all.subarray(1, 2), all.subarray(2)])).toEqual([{ kind: 'event', event: 'x', data: '1' }]);
  });

  it('a CR at the end of a chunk waits for a possible LF', () => {
    expect(events(new SseDecoder(), [bytes('event: a\r'), bytes('\ndata: 1\r'), bytes('\n\r'), bytes('\n')])).toEqual([
      { kind: 'event', event: 'a', data: '1' },
    ]);
  });

  it('an event past the buffer bound fails once, and the decoder is reset and usable again', () => {
    const d = new SseDecoder(64);
    const big = d.feed(bytes(`event: entries\ndata: ${'x'.repeat(100)}`));
    expect(big.ok).toBe(false);
    expect(big.ok || big.reason).toContain('larger than the client accepts');
    expect(d.feed(bytes('event: ok\ndata: 1\n\n'))).toEqual({ ok: true, value: [{ kind: 'event', event: 'ok', data: '1' }] });
  });

  it('a stream ending inside a UTF-8 character is a failure', () => {
    const d = new SseDecoder();
    expect(d.feed(Uint8Array.of(0xf0, 0x9f)).ok).toBe(true);
    expect(d.end().ok).toBe(false);
  });
});

describe('streamTimeouts', () => {
  const cap = (inbound: Record<string, unknown>): Capability => {
    const r = checkCapability({ protocol: 'MA2H', version: '0.5.0', inbound: { session_param: true, ...inbound } });
    if (!r.ok) throw new Error(r.reason);
    return r.value;
  };
  it('outlasts the hold and twice the keep-alive, with floors for sub-second test Hubs', () => {
    expect(streamTimeouts(cap({ stream_max_hold_seconds: 30, keepalive_seconds: 15 }))).toEqual({ headersTimeout: 40_000, bodyTimeout: 40_000 });
    expect(streamTimeouts(cap({ stream_max_hold_seconds: 0.5, keepalive_seconds: 0.25 }))).toEqual({ headersTimeout: 30_000, bodyTimeout: 10_500 });
    expect(streamTimeouts(cap({ stream_max_hold_seconds: 50 }))).toEqual({ headersTimeout: 60_000, bodyTimeout: 110_000 });
    expect(streamTimeouts(null)).toEqual({ headersTimeout: 40_000, bodyTimeout: 40_000 });
  });
});
