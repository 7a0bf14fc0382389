import { describe, expect, it } from 'vitest';
import { maxResponseBytes } from '../../../src/hub/client/http.js';
import { waitFor } from '../../helpers/wait.js';
import { sseHead, usePeerClient, writeChunk } from './peer.js';

/**
 * The stream's dispatch handler (stream.ts) on the paths sse.test.ts leaves out: an abort before
 * the answer's head, a peer that drops the connection while chunks wait behind a slow handler
 * (the socket paused), a handler that throws, and an error answer longer than the cap.
 */
const at = '2026-09-18T14:33:07.000Z';
const open = { session: 'sess_1', expires_at: at, lease_seconds: 900, hold_ms: 30000, stream_max_hold_seconds: 30 };
const entries = (text: string): string =>
  `event: entries\ndata: ${JSON.stringify({
    messages: [
      {
        entry: { id: 'ent_1', kind: 'directive', from: 'human:acct_1', to: 'agent:agt_1#sess_1', created_at: at, text },
        signature: `t=1,jti=jti_AbCdEfGhIjKlMnOpQr,alg=hmac-sha256,v1=${'a'.repeat(64)}`,
      },
    ],
  })}\n\n`;
const textOf = (messages: unknown[]): string => (messages[0] as { entry: { text: string } }).entry.text;

const peerClient = usePeerClient();

describe('openStream through the dispatch handler, over a real socket', () => {
  it('an abort before the answer has begun ends the stream as a network failure and drops the connection', async () => {
    let closed = false;
    const { peer, client } = await peerClient((_req, res) => void res.on('close', () => (closed = true)), { token: 't' });
    const ac = new AbortController();
    const ended = client.openStream('sess_1', { signal: ac.signal });
    await waitFor(() => peer.requests.length === 1, { what: 'the peer to see the stream request' });
    ac.abort();
    expect(await ended).toMatchObject({ kind: 'failure', failure: { kind: 'network', message: expect.stringContaining('aborted') } });
    await waitFor(() => closed, { what: 'the peer to see its socket closed' });
  });

  it('a signal aborted before the call ends the stream as a network failure, without waiting on the peer', async () => {
    const { client } = await peerClient(() => undefined, { token: 't' });
    const end = await client.openStream('sess_1', { signal: AbortSignal.abort() });
    expect(end).toMatchObject({ kind: 'failure', failure: { kind: 'network', message: expect.stringContaining('aborted') } });
  });

  it('a connection dropped mid-event while chunks wait behind a slow handler: every whole event first, in order, then a network failure', async () => {
    const n = 40;
    let dropped = false;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const got: string[] = [];
    const { client } = await peerClient(
      async (_req, res) => {
        sseHead(res);
        await writeChunk(res, `event: open\ndata: ${JSON.stringify(open)}\n\n`);
        for (let i = 0; i < n; i++) await writeChunk(res, entries(`m${i}`));
        await writeChunk(res, entries(`m${n}`).slice(0, 30));
        res.socket?.destroy();
        dropped = true;
      },
      { token: 't' },
    );
    const ended = client.openStream('sess_1', {
      onEntries: async (e) => {
        await gate;
        got.push(textOf(e.messages));
      },
    });
    await waitFor(() => dropped, { what: 'the peer to drop the connection' });
    release();
    expect(await ended).toMatchObject({ kind: 'failure', failure: { kind: 'network', message: expect.stringContaining('other side closed') } });
    expect(got).toEqual(Array.from({ length: n }, (_v, i) => `m${i}`));
  });

  it('a connection dropped while a handler runs (the socket not paused) is a network failure once the handler is done', async () => {
    let inHandler = false;
    let dropped = false;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const { client } = await peerClient(
      async (_req, res) => {
        sseHead(res);
        await writeChunk(res, `event: open\ndata: ${JSON.stringify(open)}\n\n${entries('m0')}`);
        await waitFor(() => inHandler, { what: 'the client to be inside its handler' });
        res.socket?.destroy();
        res.on('close', () => (dropped = true));
      },
      { token: 't' },
    );
    const got: string[] = [];
    const ended = client.openStream('sess_1', {
      onEntries: async (e) => {
        inHandler = true;
        await gate;
        got.push(textOf(e.messages));
      },
    });
    await waitFor(() => dropped, { what: 'the peer to drop the connection' });
    release();
    expect(await ended).toMatchObject({ kind: 'failure', failure: { kind: 'network', message: expect.stringContaining('other side closed') } });
    expect(got).toEqual(['m0']);
  });

  it('a handler that throws ends the stream with its message and drops the connection', async () => {
    let closed = false;
    const { client } = await peerClient(
      async (_req, res) => {
        res.on('close', () => (closed = true));
        sseHead(res);
        await writeChunk(res, `event: open\ndata: ${JSON.stringify(open)}\n\n${entries('m0')}`);
      },
      { token: 't' },
    );
    const seen: string[] = [];
    const end = await client.openStream('sess_1', {
      onOpen: () => {
        throw new Error('the handler failed');
      },
      onEntries: (e) => void seen.push(textOf(e.messages)),
    });
    expect(end).toMatchObject({ kind: 'failure', failure: { kind: 'network', message: expect.stringContaining('the handler failed') } });
    expect(seen).toEqual([]);
    await waitFor(() => closed, { what: 'the peer to see its socket closed' });
  });

  it('an error answer longer than the cap is read up to it: its status and Retry-After, the connection dropped', async () => {
    let closed = false;
    const { client } = await peerClient(
      async (_req, res) => {
        res.on('close', () => (closed = true));
        res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '7' });
        const piece = 'x'.repeat(64 * 1024);
        for (let sent = 0; sent <= maxResponseBytes() && !closed; sent += piece.length) await writeChunk(res, piece).catch(() => undefined);
      },
      { token: 't' },
    );
    const end = await client.openStream('sess_1');
    expect(end).toMatchObject({ kind: 'failure', failure: { kind: 'http', status: 503, code: 'http_503', retryAfterSeconds: 7 } });
    await waitFor(() => closed, { what: 'the peer to see its socket closed' });
  });
});
