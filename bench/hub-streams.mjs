// Shared by the Hub benches (hub-sse, hub-cluster, send-cost): streams held like a bridge holds
// them, and send→push latency. A push can beat the send's own HTTP answer back to this process,
// so arrivals are kept until the send's start time is known. Never run by CI.
import net from 'node:net';
import { endpoint, ResponseReader } from './sender.mjs';

/**
 * Where a push waited, from the stream's state when its send started (`sent`'s `at`) and the
 * connection it arrived on: `open` — on the connection open at the send; `between` — the stream
 * was between connections (its hold bound had ended one), so the push waited for the next
 * connect, as it should; `missed` — a connection was open at the send, yet the push came on a
 * later one (the open connection ended before pushing it: the hold bound's race, or a hole).
 */
const WAITS = ['open', 'between', 'missed'];

export function pushTimer() {
  const sentAt = new Map();
  const arrivedAt = new Map();
  const latencies = [];
  /** Each push's send start (performance.now()), in the order of `latencies`: a tail split by when its sends started. */
  const starts = [];
  /** Per class of {@link WAITS}: latencies, and for `missed`, how long the open connection lived on after the send's 202 (its entry committed). */
  const waits = Object.fromEntries(WAITS.map((w) => [w, []]));
  const missedLived = [];
  const classify = (at, on, accepted, latency) => {
    if (at === undefined || on === undefined) return;
    const cls = !at.open ? 'between' : on.conn === at.conn ? 'open' : 'missed';
    waits[cls].push(latency);
    if (cls === 'missed') missedLived.push((at.state.ended.get(at.conn) ?? Infinity) - accepted);
  };
  return {
    latencies,
    starts,
    waits,
    missedLived,
    /** A message id was seen on a stream now (`on`: the connection it came on, from {@link holdStream}). */
    arrived(id, now, on) {
      const sent = sentAt.get(id);
      if (sent !== undefined) {
        latencies.push(now - sent.start);
        starts.push(sent.start);
        classify(sent.at, on, sent.accepted, now - sent.start);
        sentAt.delete(id);
      } else if (!arrivedAt.has(id)) arrivedAt.set(id, { now, on });
    },
    /** The send of `id` started at `start` (its 202 is in); `at`: {@link connectionAt} of its stream when it started. */
    sent(id, start, at) {
      const arrived = arrivedAt.get(id);
      const accepted = performance.now();
      if (arrived !== undefined) {
        latencies.push(arrived.now - start);
        starts.push(start);
        classify(at, arrived.on, accepted, arrived.now - start);
        arrivedAt.delete(id);
      } else sentAt.set(id, { start, at, accepted });
    },
    /** Latency at percentile p, in ms (of `xs`, all pushes by default). */
    pct(p, xs = latencies) {
      const sorted = [...xs].sort((a, b) => a - b);
      return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
    },
  };
}

/** A stream's connection now: which (counted from 1) and whether it is open (its `open` seen, not ended). */
export const connectionAt = (state) => ({ state, conn: state.conn, open: state.open });

/**
 * The message ids of an `entries` frame's data (`{"messages":[{"entry":{…},"signature":…},…]}`),
 * by scanning for `"message_id":"`: an entry's body is canonical JSON (no spaces), and the ids
 * are read without parsing the whole frame. The first frame a process sees is parsed as JSON
 * too, and the two must agree (a format change fails the bench rather than losing pushes).
 */
const ID_KEY = '"message_id":"';
let idsChecked = false;
export function messageIds(data) {
  const ids = [];
  for (let at = data.indexOf(ID_KEY); at >= 0; at = data.indexOf(ID_KEY, at)) {
    at += ID_KEY.length;
    const end = data.indexOf('"', at);
    ids.push(data.slice(at, end));
    at = end;
  }
  if (!idsChecked) {
    idsChecked = true;
    const parsed = JSON.parse(data).messages.map((d) => d.entry.message_id);
    if (parsed.join() !== ids.join()) throw new Error(`hub-streams: message ids scanned ${ids.join()} ≠ parsed ${parsed.join()}`);
  }
  return ids;
}

/**
 * One stream on `s` ({url, id, token}), reconnecting at once on the hold bound (as a bridge
 * does), over the connection it keeps (as a bridge's client does: src/hub/client/stream-connections.ts):
 * a socket of its own, so a reconnect goes out on it as soon as the answer that just ended is
 * read. `fresh()` true: this connect opens a new connection instead (how these benches held
 * streams until session 8). `onOpen` hears the first `open`; `onAnswer` every answer to a
 * connect, with its HTTP status (or `error` when none came: refused, reset), `onConnect` every
 * 200, `onConnection` every connect that opened a TCP connection. Every pushed message id goes to
 * `timer` with the connection it came on (stamped as its bytes are read). `state`, when given, is
 * kept up to date (see {@link connectionAt}). Returns the connects in flight, with `stop()`: end
 * them all and reconnect no more (a connect destroyed alone reconnects, as a reset one does).
 * Plain sockets, the request written once per stream and answers read by {@link ResponseReader}:
 * at 10,000 streams node:http's client (a ClientRequest, an agent per stream) cost this process
 * more CPU than the sends it times (docs/deploy.md, session 9).
 */
export function holdStream(
  s,
  timer,
  {
    onOpen = () => undefined,
    onConnect = () => undefined,
    onAnswer = () => undefined,
    onConnection = () => undefined,
    fresh = () => false,
    state = { conn: 0, open: false, ended: new Map() },
  } = {},
) {
  const requests = [];
  const { host, port, hostHeader } = endpoint(s.url);
  const text = `GET /v1/inbox/stream?session=${s.id} HTTP/1.1\r\nhost: ${hostHeader}\r\naccept: text/event-stream\r\nauthorization: Bearer ${s.token}\r\n\r\n`;
  let stopped = false;
  let socket = null;
  requests.stop = () => {
    stopped = true;
    for (const r of [...requests]) r.destroy();
    socket?.destroy();
  };
  let first = true;
  // The connect in flight, and how it ends (the answer's end, a reset before or after it): once.
  let current = null;
  let on = null;
  const ended = (delayMs) => {
    const req = current;
    if (req === null || req.done) return;
    req.done = true;
    current = null;
    requests.splice(requests.indexOf(req), 1);
    if (on !== null) {
      state.open = false;
      state.ended.set(on.conn, performance.now());
      on = null;
    }
    if (!stopped) setTimeout(connect, delayMs);
  };
  let sse = '';
  const decoder = new TextDecoder();
  const reader = (sock) =>
    new ResponseReader({
      onHead: (status, close) => {
        // The server closes this connection after the answer: the next connect opens another.
        if (close) sock.keep = false;
        current.answered = true;
        onAnswer(status);
        if (status === 200) onConnect();
        current.ok = status === 200;
        sse = '';
      },
      onBody: (bytes) => {
        if (!current?.ok) return;
        sse += decoder.decode(bytes, { stream: true });
        let cut;
        while ((cut = sse.indexOf('\n\n')) >= 0) {
          const frame = sse.slice(0, cut);
          sse = sse.slice(cut + 2);
          if (frame.startsWith('event: open')) {
            on = { conn: ++state.conn };
            state.open = true;
            if (first) {
              first = false;
              onOpen();
            }
          }
          if (!frame.startsWith('event: entries')) continue;
          const now = performance.now();
          for (const id of messageIds(frame.slice(frame.indexOf('data: ') + 6))) timer.arrived(id, now, on ?? undefined);
        }
      },
      onEnd: () => ended(0),
    });
  const open = () => {
    const sock = net.connect({ host, port });
    sock.setNoDelay(true);
    onConnection();
    const r = reader(sock);
    sock.on('data', (d) => r.push(d));
    const lost = () => {
      if (socket === sock) socket = null;
      if (current !== null && current.socket === sock) {
        if (!current.answered) onAnswer('error');
        ended(100);
      }
    };
    sock.on('error', lost);
    sock.on('close', lost);
    return sock;
  };
  const connect = () => {
    if (stopped) return;
    if (socket === null || socket.destroyed || socket.keep === false || fresh()) {
      socket?.destroy();
      socket = open();
    }
    const req = { socket, answered: false, ok: false, done: false, destroy: () => req.socket.destroy() };
    current = req;
    requests.push(req);
    socket.write(text);
  };
  connect();
  return requests;
}
