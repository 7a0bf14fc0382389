import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach } from 'vitest';
import { HubClient, type HubClientOptions } from '../../../src/hub/client/index.js';

/**
 * A tiny HTTP peer on loopback that answers with exact bytes — a test peer standing in
 * for a Hub's wire behaviour, not a mock of our code.
 */
export interface SeenRequest {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

export interface Peer {
  url: string;
  requests: SeenRequest[];
  close(): Promise<void>;
}

export type PeerHandler = (req: SeenRequest, res: http.ServerResponse) => void | Promise<void>;

export async function startPeer(handler: PeerHandler): Promise<Peer> {
  const requests: SeenRequest[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const seen = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
      requests.push(seen);
      res.socket?.setNoDelay(true);
      void Promise.resolve(handler(seen, res)).catch((e: unknown) => {
        res.destroy(e instanceof Error ? e : new Error(String(e)));
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * A peer answering with `handler` and our HubClient pointed at it, for one test; after the
 * test the client is closed, then the peer.
 */
export function usePeerClient(): (handler: PeerHandler, opts: Omit<HubClientOptions, 'baseUrl'>) => Promise<{ peer: Peer; client: HubClient }> {
  const made: { peer: Peer; client: HubClient }[] = [];
  afterEach(async () => {
    for (const { peer, client } of made.splice(0)) {
      await client.close();
      await peer.close();
    }
  });
  return async (handler, opts) => {
    const peer = await startPeer(handler);
    const pair = { peer, client: new HubClient({ ...opts, baseUrl: peer.url }) };
    made.push(pair);
    return pair;
  };
}

/** Write one chunk and wait until it is handed to the kernel, so separate writes tend to travel separately. */
export const writeChunk = (res: http.ServerResponse, chunk: string | Buffer): Promise<void> =>
  new Promise((resolve, reject) => res.write(chunk, (e) => (e ? reject(e) : resolve())));

export function json(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(typeof body === 'string' ? body : JSON.stringify(body));
}

export function sseHead(res: http.ServerResponse): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  res.flushHeaders();
}
