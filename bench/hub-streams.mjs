// Shared by the Hub benches (hub-sse, hub-cluster, send-cost): streams held like a bridge holds
// them, and send→push latency. A push can beat the send's own HTTP answer back to this process,
// so arrivals are kept until the send's start time is known. Never run by CI.
import { Agent, request } from 'node:http';

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
    waits,
    missedLived,
    /** A message id was seen on a stream now (`on`: the connection it came on, from {@link holdStream}). */
    arrived(id, now, on) {
      const sent = sentAt.get(id);
      if (sent !== undefined) {
        latencies.push(now - sent.start);
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
 * One stream on `s` ({url, id, token}), reconnecting at once on the hold bound (as a bridge
 * does), over the connection it keeps (as a bridge's client does: src/hub/client/stream-connections.ts):
 * a keep-alive agent of its own with one socket, so a reconnect queues behind the answer that just
 * ended and goes out on its socket. `fresh()` true: this connect opens a new connection instead
 * (how these benches held streams until session 8). `onOpen` hears the first `open`; `onAnswer`
 * every answer to a connect, with its HTTP status (or `error` when none came: refused, reset),
 * `onConnect` every 200, `onConnection` every connect that opened a TCP connection. Every pushed
 * message id goes to `timer` with the connection it came on. `state`, when given, is kept up to
 * date (see {@link connectionAt}). Returns the requests in flight, with `stop()`: end them all and
 * reconnect no more (a request destroyed alone reconnects, as a reset one does).
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
  const kept = new Agent({ keepAlive: true, maxSockets: 1 });
  let stopped = false;
  requests.stop = () => {
    stopped = true;
    for (const r of [...requests]) r.destroy();
    kept.destroy();
  };
  let first = true;
  const connect = () => {
    const req = request(`${s.url}/v1/inbox/stream?session=${s.id}`, {
      agent: fresh() ? false : kept,
      headers: { accept: 'text/event-stream', authorization: `Bearer ${s.token}` },
    });
    // The agent marks a socket it hands out again before the request sees it.
    req.once('socket', () => {
      if (!req.reusedSocket) onConnection();
    });
    requests.push(req);
    let answered = false;
    // Any way this connect ends (the answer's end, a reset before or after it) reconnects once.
    let done = false;
    const again = (delayMs) => {
      if (done) return;
      done = true;
      requests.splice(requests.indexOf(req), 1);
      if (on !== null) {
        state.open = false;
        state.ended.set(on.conn, performance.now());
      }
      if (!stopped) setTimeout(connect, delayMs);
    };
    let on = null;
    req.on('response', (res) => {
      answered = true;
      onAnswer(res.statusCode);
      if (res.statusCode === 200) onConnect();
      let buf = '';
      res.setEncoding('utf8').on('data', (d) => {
        buf += d;
        let cut;
        while ((cut = buf.indexOf('\n\n')) >= 0) {
          const frame = buf.slice(0, cut);
          buf = buf.slice(cut + 2);
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
          for (const d of JSON.parse(frame.slice(frame.indexOf('data: ') + 6)).messages) timer.arrived(d.entry.message_id, now, on ?? undefined);
        }
      });
      res.on('end', () => again(0));
      res.on('error', () => again(100));
    });
    req.on('error', () => {
      if (!answered) onAnswer('error');
      again(100);
    });
    req.end();
  };
  connect();
  return requests;
}
