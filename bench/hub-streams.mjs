// Shared by the Hub benches (hub-sse, hub-cluster): streams held like a bridge holds them, and
// send→push latency. A push can beat the send's own HTTP answer back to this process, so
// arrivals are kept until the send's start time is known. Never run by CI.
import { request } from 'node:http';

export function pushTimer() {
  const sentAt = new Map();
  const arrivedAt = new Map();
  const latencies = [];
  return {
    latencies,
    /** A message id was seen on a stream now. */
    arrived(id, now) {
      const t0 = sentAt.get(id);
      if (t0 !== undefined) {
        latencies.push(now - t0);
        sentAt.delete(id);
      } else if (!arrivedAt.has(id)) arrivedAt.set(id, now);
    },
    /** The send of `id` started at `start` (its 202 is in). */
    sent(id, start) {
      const arrived = arrivedAt.get(id);
      if (arrived !== undefined) {
        latencies.push(arrived - start);
        arrivedAt.delete(id);
      } else sentAt.set(id, start);
    },
    /** Latency at percentile p, in ms. */
    pct(p) {
      const sorted = [...latencies].sort((a, b) => a - b);
      return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
    },
  };
}

/**
 * One stream on `s` ({url, id, token}), reconnecting at once on the hold bound (as a bridge
 * does). `onOpen` hears the first `open`, `onConnect` every connect; every pushed message id
 * goes to `timer`. Returns the requests made, so a run can end them.
 */
export function holdStream(s, timer, { onOpen = () => undefined, onConnect = () => undefined } = {}) {
  const requests = [];
  let first = true;
  const connect = () => {
    const req = request(`${s.url}/v1/inbox/stream?session=${s.id}`, {
      agent: false,
      headers: { accept: 'text/event-stream', authorization: `Bearer ${s.token}` },
    });
    requests.push(req);
    req.on('response', (res) => {
      onConnect();
      let buf = '';
      res.setEncoding('utf8').on('data', (d) => {
        buf += d;
        let cut;
        while ((cut = buf.indexOf('\n\n')) >= 0) {
          const frame = buf.slice(0, cut);
          buf = buf.slice(cut + 2);
          if (first && frame.startsWith('event: open')) {
            first = false;
            onOpen();
          }
          if (!frame.startsWith('event: entries')) continue;
          const now = performance.now();
          for (const d of JSON.parse(frame.slice(frame.indexOf('data: ') + 6)).messages) timer.arrived(d.entry.message_id, now);
        }
      });
      res.on('end', () => setImmediate(connect));
    });
    req.on('error', () => setTimeout(connect, 100));
    req.end();
  };
  connect();
  return requests;
}
