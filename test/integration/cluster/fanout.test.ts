import { describe, expect, it } from 'vitest';
import { hubCall, type TestHub } from '../../helpers/hub.js';
import { twoInstances } from '../../helpers/cluster.js';
import { waitFor } from '../../helpers/wait.js';
import { openSse, type SseConn } from '../hub/sse.js';

// Issue 14: every instance LISTENs and hears every send's NOTIFY, most of them for streams held
// elsewhere. What that costs an instance holding no stream the send is for is a map lookup: no
// database work. COUNTED from each instance's /metrics (round trips by work, wake-ups heard),
// never timed: a change that makes a wake-up read on an instance with no stream for it fails here.

async function metricsOf(h: TestHub): Promise<string> {
  const admin = /^hub: admin \(healthz, readyz, metrics\) at (\S+)$/m.exec(h.output().stdout)![1]!;
  return (await fetch(`${admin}/metrics`)).text();
}

/** Every round trip so far but the timers' (sweep, presence), and the wake-ups heard from the other instance. */
async function countsOf(h: TestHub): Promise<{ trips: number; pushTrips: number; heard: number }> {
  const text = await metricsOf(h);
  let trips = 0;
  let pushTrips = 0;
  for (const m of text.matchAll(/^oh_hai_hub_db_round_trips_total\{work="([^"]+)",kind="(?:unit|read)"\} (\d+)$/gm)) {
    if (m[1] === 'sweep' || m[1] === 'presence') continue;
    trips += Number(m[2]);
    if (m[1] === 'push') pushTrips += Number(m[2]);
  }
  const heard = Number(/^oh_hai_hub_notify_lag_seconds_count (\d+)$/m.exec(text)?.[1] ?? 0);
  return { trips, pushTrips, heard };
}

const texts = (c: SseConn): string[] =>
  c.events.filter((e) => e.event === 'entries').flatMap((e) => (JSON.parse(e.data).messages as Array<{ entry: { text: string } }>).map((m) => m.entry.text));

describe('a wake-up for a stream held elsewhere costs the instance that hears it no database work (PostgreSQL)', () => {
  const SENDS = 10;
  const pair = twoInstances(['--admin-listen', '127.0.0.1:0', '--stream-max-hold-seconds', '120']);

  it(`${SENDS} sends to a session streamed on A, through A and through B: B hears each and reads nothing; A reads each page`, async () => {
    const [a, b] = [pair.a(), pair.b()];
    const sender = await a.mintAgent('sender');
    const recipient = await a.mintAgent('recipient');
    // B holds streams too, of another agent: a wake-up that read every stream's page would show.
    const other = await a.mintAgent('other');
    const streams: SseConn[] = [];
    const stream = async (h: TestHub, token: string, key: string) => {
      const r = await hubCall(h, 'POST', '/v1/sessions', { token, body: { client_key: key, lease_seconds: 300 } });
      expect(r.status, r.text).toBe(201);
      const c = await openSse(`${h.url}/v1/inbox/stream?session=${r.body.session.id}`, { token });
      await c.next((e) => e.event === 'open');
      streams.push(c);
      return { address: r.body.session.address as string, conn: c };
    };
    try {
      const target = await stream(a, recipient.token, 'on-a');
      for (let i = 0; i < 3; i++) await stream(b, other.token, `on-b-${i}`);
      // Every connect's first page read (in its renewal statement) and counted: the counters are still.
      let before = await Promise.all([a, b].map(countsOf));
      await waitFor(async () => {
        const now = await Promise.all([a, b].map(countsOf));
        const still = now.every((n, i) => n.trips === before[i]!.trips);
        before = now;
        return still;
      });
      for (let i = 0; i < 2 * SENDS; i++) {
        const via = i < SENDS ? a : b;
        const r = await hubCall(via, 'POST', '/v1/messages', { token: sender.token, body: { to: target.address, intent: 'notify', text: `n${i}` } });
        expect(r.status, r.text).toBe(202);
        await waitFor(() => texts(target.conn).length === i + 1, { what: `push ${i} on A` });
      }
      // Sends through A: B hears each NOTIFY. A hears those sent through B.
      await waitFor(async () => (await countsOf(b)).heard - before[1]!.heard >= SENDS, { what: "B heard A's sends" });
      await waitFor(async () => (await countsOf(a)).heard - before[0]!.heard >= SENDS, { what: "A heard B's sends" });
      // A late page read would show here.
      await new Promise((r) => setTimeout(r, 300));
      const [afterA, afterB] = await Promise.all([a, b].map(countsOf));
      const onB = { pushTrips: afterB!.pushTrips - before[1]!.pushTrips, heard: afterB!.heard - before[1]!.heard };
      const onA = { pushTrips: afterA!.pushTrips - before[0]!.pushTrips, heard: afterA!.heard - before[0]!.heard };
      console.log(`${2 * SENDS} sends to a stream on A (half through B): on A ${JSON.stringify(onA)}, on B ${JSON.stringify(onB)}`);
      // B's only round trips are the sends made through it; none for a wake-up, its own or heard.
      expect(onB).toEqual({ pushTrips: 0, heard: SENDS });
      // A reads one page per send, whichever instance took it (woken by its own commit or by B's NOTIFY).
      expect(onA).toEqual({ pushTrips: 2 * SENDS, heard: SENDS });
      expect(streams.slice(1).map(texts)).toEqual([[], [], []]);
    } finally {
      for (const c of streams) c.close();
    }
  });
});
