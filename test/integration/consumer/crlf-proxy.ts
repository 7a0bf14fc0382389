import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A test peer between the consumer and the real Hub that re-frames every SSE response
 * with CRLF line ends (a conforming Hub may use CR, LF or CRLF); everything else passes
 * through untouched. Raw LF only ever ends a line in SSE framing — JSON escapes newlines
 * inside data — so rewriting LF to CRLF changes framing and nothing else.
 */
export async function startCrlfProxy(target: string): Promise<{ url: string; close(): Promise<void> }> {
  const upstream = new URL(target);
  const server = http.createServer((req, res) => {
    const out = http.request(
      { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: { ...req.headers, host: upstream.host } },
      (up) => {
        const sse = /^text\/event-stream/.test(String(up.headers['content-type'] ?? ''));
        res.writeHead(up.statusCode ?? 502, up.headers);
        if (!sse) {
          up.pipe(res);
          return;
        }
        res.flushHeaders();
        up.on('data', (chunk: Buffer) => res.write(Buffer.from(chunk.toString('latin1').replace(/\n/g, '\r\n'), 'latin1')));
        up.on('end', () => res.end());
        up.on('error', () => res.destroy());
      },
    );
    out.on('error', () => res.destroy());
    // The client going away ends the upstream request too (a held stream must not linger).
    res.on('close', () => out.destroy());
    req.pipe(out);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
