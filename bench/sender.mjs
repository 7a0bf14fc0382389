// Shared by the Hub benches that send (consumer-drain, hub-sse, hub-cluster, send-cost,
// pg-send-cost): a sender as a long-running process is one — requests over kept-alive
// connections, one per request in flight. The load generator shares the machine with the Hub,
// so it must cost less than what it measures: fetch (undici) cost this process 0.5–0.8 ms of CPU
// per request warm, node:http with keep-alive ~0.15 ms (docs/performance.md), and at 10,000
// held streams node:http's client machinery (a ClientRequest, agent bookkeeping, the parser's
// callbacks, events) was most of this process's CPU (docs/deploy.md, session 9). So requests
// are written as one string on a plain socket and answers read by {@link ResponseReader}, as a
// load tool (wrk) does: HTTP/1.1 as the Hub speaks it, nothing more. Never run by CI.
import net from 'node:net';

const CRLF2 = Buffer.from('\r\n\r\n');

/**
 * One HTTP/1.1 answer after another on a kept-alive connection, read incrementally:
 * `onHead(status, close)` (close: the server will close the connection after this answer),
 * `onBody(bytes)` for each piece of the body (chunked or Content-Length), `onEnd()` when the
 * answer is complete. Then it reads the next answer.
 */
export class ResponseReader {
  constructor({ onHead, onBody, onEnd }) {
    this.onHead = onHead;
    this.onBody = onBody;
    this.onEnd = onEnd;
    this.buf = null;
    // head | length | size | data | crlf | last
    this.state = 'head';
    this.left = 0;
  }

  push(chunk) {
    this.buf = this.buf === null || this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk]);
    for (;;) {
      const buf = this.buf;
      if (this.state === 'head') {
        const cut = buf.indexOf(CRLF2);
        if (cut < 0) return;
        const head = buf.toString('latin1', 0, cut).toLowerCase();
        this.buf = buf.subarray(cut + 4);
        const status = Number(head.slice(9, 12));
        const length = /\r\ncontent-length: *(\d+)/.exec(head);
        this.onHead(status, head.includes('\r\nconnection: close'));
        if (length !== null) {
          this.left = Number(length[1]);
          this.state = 'length';
        } else if (head.includes('\r\ntransfer-encoding: chunked')) this.state = 'size';
        else {
          // No body (a 204, a 304): the answer ends at its head.
          this.left = 0;
          this.state = 'length';
        }
      } else if (this.state === 'length') {
        const n = Math.min(this.left, buf.length);
        if (n > 0) this.onBody(buf.subarray(0, n));
        this.buf = buf.subarray(n);
        this.left -= n;
        if (this.left > 0) return;
        this.state = 'head';
        this.onEnd();
      } else if (this.state === 'size') {
        const eol = buf.indexOf('\r\n');
        if (eol < 0) return;
        this.left = parseInt(buf.toString('latin1', 0, eol), 16);
        this.buf = buf.subarray(eol + 2);
        this.state = this.left === 0 ? 'last' : 'data';
      } else if (this.state === 'data') {
        const n = Math.min(this.left, buf.length);
        if (n === 0) return;
        this.onBody(buf.subarray(0, n));
        this.buf = buf.subarray(n);
        this.left -= n;
        if (this.left === 0) this.state = 'crlf';
      } else {
        // The CRLF after a chunk's data, or after the last chunk (no trailers: the Hub sends none).
        if (buf.length < 2) return;
        this.buf = buf.subarray(2);
        const last = this.state === 'last';
        this.state = last ? 'head' : 'size';
        if (last) this.onEnd();
      }
    }
  }
}

/** `host:port` of an http:// URL, and the Host header it takes. */
export function endpoint(url) {
  const u = new URL(url);
  return { host: u.hostname, port: Number(u.port || 80), hostHeader: u.host };
}

/**
 * `call(token, method, path, body?)` against `url`: the parsed JSON, or a throw naming the
 * status. `body` is sent as JSON (a string: already JSON, sent as it is). At most `maxSockets`
 * connections, kept alive between requests; a request waits for a free one.
 */
export function keepAliveCaller(url, maxSockets) {
  const { host, port, hostHeader } = endpoint(url);
  const idle = [];
  const waiting = [];
  let open = 0;

  /** A kept-alive connection: one request at a time; `run(text)` resolves with {status, body}. */
  const connection = () => {
    const socket = net.connect({ host, port });
    socket.setNoDelay(true);
    open += 1;
    let pending = null;
    let status = 0;
    let parts = [];
    const c = {
      socket,
      closed: false,
      // A connection that answered before: a reset on it is the server closing it as idle.
      used: false,
      run(text) {
        return new Promise((resolve, reject) => {
          pending = { resolve, reject };
          socket.write(text);
        });
      },
    };
    const reader = new ResponseReader({
      onHead: (s, close) => {
        status = s;
        if (close) c.closed = true;
      },
      onBody: (b) => parts.push(b),
      onEnd: () => {
        const p = pending;
        pending = null;
        const body = parts.length === 1 ? parts[0].toString() : Buffer.concat(parts).toString();
        parts = [];
        c.used = true;
        p?.resolve({ status, body });
      },
    });
    socket.on('data', (d) => reader.push(d));
    let dead = false;
    const gone = (e) => {
      if (dead) return;
      dead = true;
      c.closed = true;
      open -= 1;
      const i = idle.indexOf(c);
      if (i >= 0) idle.splice(i, 1);
      const p = pending;
      pending = null;
      p?.reject(Object.assign(e ?? new Error('the connection closed before the answer'), { code: e?.code ?? 'ECONNRESET', reused: c.used }));
      // A request queued for a connection: this one's place is free.
      if (waiting.length > 0 && open < maxSockets) waiting.shift()(connection());
    };
    socket.on('error', gone);
    socket.on('close', () => gone(null));
    return c;
  };
  const take = () => {
    const c = idle.pop();
    if (c !== undefined) return Promise.resolve(c);
    if (open < maxSockets) return Promise.resolve(connection());
    return new Promise((resolve) => waiting.push(resolve));
  };
  const give = (c) => {
    // A connection the server closes: its end hands its place to a waiting request.
    if (c.closed) c.socket.destroy();
    else if (waiting.length > 0) waiting.shift()(c);
    else idle.push(c);
  };

  const attempt = async (token, method, p, body) => {
    const data = body === undefined ? '' : typeof body === 'string' ? body : JSON.stringify(body);
    const text =
      `${method} ${p} HTTP/1.1\r\nhost: ${hostHeader}\r\nauthorization: Bearer ${token}\r\n` +
      (body === undefined ? '\r\n' : `content-type: application/json\r\ncontent-length: ${Buffer.byteLength(data)}\r\n\r\n${data}`);
    const c = await take();
    try {
      const { status, body: answer } = await c.run(text);
      if (status >= 400) throw new Error(`${method} ${p} → ${status} ${answer}`);
      return JSON.parse(answer);
    } finally {
      give(c);
    }
  };
  // A kept-alive socket the Hub closed as idle (its keep-alive timeout) resets the next request
  // on it before the Hub read it, or fails its write (EPIPE): that one is made again, on a new connection.
  const call = (token, method, p, body) =>
    attempt(token, method, p, body).catch((e) =>
      (e.code === 'ECONNRESET' || e.code === 'EPIPE') && e.reused ? attempt(token, method, p, body) : Promise.reject(e),
    );
  call.close = () => {
    for (const c of idle.splice(0)) c.socket.destroy();
  };
  return call;
}
