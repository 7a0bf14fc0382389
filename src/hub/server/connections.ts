import { readFileSync } from 'node:fs';
import type { Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/** Descriptors kept back from the connection cap: stdio, the store and its WAL, logs, libuv's own, a database pool. */
const FD_RESERVE = 64;
/** Where the fd limit cannot be read (no /proc). */
const FALLBACK_CAP = 1000;

/** The default cap: the soft RLIMIT_NOFILE less a reserve, so the Hub never runs out of descriptors to accept with. */
export function defaultMaxConnections(): number {
  try {
    const m = /^Max open files\s+(\d+|unlimited)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
    if (m && m[1] !== 'unlimited') return Math.max(8, Number(m[1]) - FD_RESERVE);
    if (m) return Number.MAX_SAFE_INTEGER;
  } catch {
    // No /proc: the fallback below.
  }
  return FALLBACK_CAP;
}

/** TCP connections this listener accepted since start, and open now (/metrics: a kept-alive client makes many requests per connection). */
export interface ConnectionCounts {
  accepted: number;
  open: number;
}

/**
 * Bound the open client connections. Past the cap, the oldest IDLE connection is closed to make
 * room — one with no request in flight: a keep-alive socket between requests, or one that has not
 * finished sending a request (a slowloris) — so idle sockets can never lock others out. A held
 * stream or long-poll is never shed for a newcomer; when every connection is busy, the newcomer is
 * refused (closed at once), and the clients already served keep their answers.
 */
export function capConnections(server: Server, cap: number): ConnectionCounts {
  /** Open sockets in the order they connected, with their requests in flight. */
  const open = new Map<Socket, { inFlight: number }>();
  const counts: ConnectionCounts = {
    accepted: 0,
    get open() {
      return open.size;
    },
  };
  server.on('connection', (socket: Socket) => {
    counts.accepted += 1;
    open.set(socket, { inFlight: 0 });
    socket.once('close', () => open.delete(socket));
    if (open.size <= cap) return;
    for (const [s, state] of open) {
      if (s !== socket && state.inFlight === 0) {
        s.destroy();
        return;
      }
    }
    socket.destroy();
  });
  // One listener for every response, found again by its request's socket: a closure and a `once`
  // wrapper per request were ~250 bytes, kept by every held stream for its 30 s hold. A response
  // closes once; a socket closed first took its count with it.
  function closed(this: ServerResponse): void {
    const state = open.get(this.req.socket);
    if (state !== undefined) state.inFlight -= 1;
  }
  server.on('request', (req, res) => {
    const state = open.get(req.socket);
    if (state === undefined) return;
    state.inFlight += 1;
    res.on('close', closed);
  });
  return counts;
}
