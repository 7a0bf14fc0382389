import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** Where a rewriter sends the (altered) stream: more text, or the end of the response. */
export interface SseSink {
  write(text: string): void;
  end(): void;
}

/**
 * Rewrites each chunk of an SSE response body (decoded as latin1, so bytes round-trip); it
 * may write anything, hold text back, or end the response. One rewriter per response.
 */
export type SseRewriter = (chunk: string, out: SseSink) => void;

/** An answer the proxy gives itself instead of asking the Hub. */
export interface ProxyAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * A test peer between the consumer and the real Hub that rewrites every SSE response with
 * a fresh rewriter from `rewriterFor()`; everything else passes through untouched, except
 * the requests `answer` chooses to answer itself.
 */
export async function startSseProxy(
  target: string,
  rewriterFor: () => SseRewriter,
  answer: (req: http.IncomingMessage) => ProxyAnswer | null = () => null,
): Promise<{ url: string; close(): Promise<void> }> {
  const upstream = new URL(target);
  const server = http.createServer((req, res) => {
    const own = answer(req);
    if (own) {
      req.resume();
      res.writeHead(own.status, own.headers).end(own.body);
      return;
    }
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
        const rewrite = rewriterFor();
        const sink: SseSink = {
          write: (text) => {
            if (!res.writableEnded) res.write(Buffer.from(text, 'latin1'));
          },
          end: () => {
            res.end();
            out.destroy();
          },
        };
        up.on('data', (chunk: Buffer) => {
          if (!res.writableEnded) rewrite(chunk.toString('latin1'), sink);
        });
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

/**
 * Re-frames every SSE response with CRLF line ends (a conforming Hub may use CR, LF or
 * CRLF). Raw LF only ever ends a line in SSE framing — JSON escapes newlines inside data —
 * so rewriting LF to CRLF changes framing and nothing else.
 */
export const startCrlfProxy = (target: string) => startSseProxy(target, () => (chunk, out) => out.write(chunk.replace(/\n/g, '\r\n')));

/**
 * Passes each stream's `open` event, then ends the stream with `after` (e.g. a reconnect
 * with a reason MA2H does not name): a Hub that fails every stream right after opening it.
 */
export const startFailAfterOpenProxy = (target: string, after: string) =>
  startSseProxy(target, () => {
    let seen = '';
    return (chunk, out) => {
      seen += chunk;
      const open = /(^|\n)event: open\n[^]*?\n\n/.exec(seen);
      if (!open) return;
      // The stream is handled as latin1 (bytes); `after` is text, sent as UTF-8.
      out.write(seen.slice(0, open.index + open[0].length) + Buffer.from(after, 'utf8').toString('latin1'));
      out.end();
    };
  });
