import { describe, expect, it } from 'vitest';
import { hubCall, type TestHub } from '../../helpers/hub.js';
import { twoInstances } from '../../helpers/cluster.js';
import { waitFor } from '../../helpers/wait.js';
import { openSse, type SseConn } from '../hub/sse.js';

// Issue 14 (session 11): on PostgreSQL a caught-up stream takes an entry its own instance inserted
// from memory, not from a page read (src/hub/server/postgres/page-memory.ts). That is exact only
// if every entry of the agent committed before it, on either instance, was heard first: here
// senders on BOTH instances race sends to sessions streamed on both and to the agents' principal
// mailboxes (claimed by the first stream), and every stream must get each of its entries once, in
// the order they were sent, within the hold (120 s: no reconnect re-pushes anything). Counted:
// most pushes took no read (the path is exercised), and none was skipped, doubled or reordered.

const LOOPS = 6;
const SENDS_PER_LOOP = 40;

async function metricsOf(h: TestHub): Promise<string> {
  const admin = /^hub: admin \(healthz, readyz, metrics\) at (\S+)$/m.exec(h.output().stdout)![1]!;
  return (await fetch(`${admin}/metrics`)).text();
}

/** Page reads of streams so far (work `push`, outside units). */
async function pushReads(h: TestHub): Promise<number> {
  return Number(/^oh_hai_hub_db_round_trips_total\{work="push",kind="read"\} (\d+)$/m.exec(await metricsOf(h))?.[1] ?? 0);
}

const received = (c: SseConn): string[] =>
  c.events.filter((e) => e.event === 'entries').flatMap((e) => (JSON.parse(e.data).messages as Array<{ entry: { text: string } }>).map((m) => m.entry.text));

/** A seeded generator (a failure repeats). */
function rng(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s * 1103515245 + 12345) & 0x7fffffff;
    return s / 0x80000000;
  };
}

describe('push from memory with two instances sending at once (PostgreSQL)', () => {
  const pair = twoInstances(['--admin-listen', '127.0.0.1:0', '--stream-max-hold-seconds', '120']);

  it(`${LOOPS} senders × ${SENDS_PER_LOOP} sends through A and B to sessions streamed on both and to principal mailboxes: nothing skipped, doubled or reordered`, async () => {
    const [a, b] = [pair.a(), pair.b()];
    const sender = await a.mintAgent('sender');
    const agents = [await a.mintAgent('r1'), await a.mintAgent('r2')];
    const streams: Array<{ conn: SseConn; address: string; session: string; agent: number }> = [];
    try {
      // Two sessions per agent, one streamed on each instance.
      for (const [n, agent] of agents.entries()) {
        for (const h of [a, b]) {
          const r = await hubCall(h, 'POST', '/v1/sessions', { token: agent.token, body: { client_key: `k-${n}-${h.port}`, lease_seconds: 300 } });
          expect(r.status, r.text).toBe(201);
          const conn = await openSse(`${h.url}/v1/inbox/stream?session=${r.body.session.id}`, { token: agent.token });
          await conn.next((e) => e.event === 'open');
          streams.push({ conn, address: r.body.session.address as string, session: r.body.session.id as string, agent: n });
        }
      }
      const targets = [...streams.map((s) => s.address), ...agents.map((g) => `agent:${g.id}`)];
      const reads0 = (await Promise.all([a, b].map(pushReads))).reduce((x, y) => x + y, 0);
      const random = rng(14);
      const sentTo = new Map<string, string>();
      // Each loop sends one at a time (its sends commit in its order); the loops race each other.
      await Promise.all(
        Array.from({ length: LOOPS }, async (_, loop) => {
          for (let i = 0; i < SENDS_PER_LOOP; i++) {
            const to = targets[Math.floor(random() * targets.length)]!;
            const via = random() < 0.5 ? a : b;
            const text = `L${loop}-${String(i).padStart(3, '0')}`;
            sentTo.set(text, to);
            const r = await hubCall(via, 'POST', '/v1/messages', { token: sender.token, body: { to, intent: 'notify', text } });
            expect(r.status, r.text).toBe(202);
          }
        }),
      );
      const total = LOOPS * SENDS_PER_LOOP;
      await waitFor(() => streams.reduce((n, s) => n + received(s.conn).length, 0) >= total, {
        timeoutMs: 60_000,
        what: `all ${total} entries pushed`,
      });
      // A late duplicate would show here.
      await new Promise((r) => setTimeout(r, 300));
      const all = streams.flatMap((s) => received(s.conn));
      expect(all.length).toBe(total);
      expect(new Set(all).size).toBe(total);
      for (const s of streams) {
        const got = received(s.conn);
        // Each entry reached a stream it was for: its session's, or (principal mail) one of its agent's.
        for (const text of got) expect([s.address, `agent:${agents[s.agent]!.id}`]).toContain(sentTo.get(text));
        // Per sending loop, in the order sent.
        for (let loop = 0; loop < LOOPS; loop++) {
          const mine = got.filter((t) => t.startsWith(`L${loop}-`));
          expect(mine, `stream ${s.address}, loop ${loop}`).toEqual([...mine].sort());
        }
      }
      const reads = (await Promise.all([a, b].map(pushReads))).reduce((x, y) => x + y, 0) - reads0;
      const pages = streams.reduce((n, s) => n + s.conn.events.filter((e) => e.event === 'entries').length, 0);
      console.log(`${total} sends, ${pages} pushed pages, ${reads} page reads`);
      // Half the sends are the stream's own instance's: those pages were taken from memory.
      expect(reads).toBeLessThan(pages);
      // What memory pushed is the entry as stored: a new connect of each session on A (nothing was
      // acked) pushes its entries again, read by the connect's statement, and they are the same.
      for (const s of streams.filter((_, i) => i % 2 === 0)) {
        s.conn.close();
        const again = await openSse(`${a.url}/v1/inbox/stream?session=${s.session}`, { token: agents[s.agent]!.token });
        streams.push({ ...s, conn: again });
        const entries = (c: SseConn) =>
          c.events
            .filter((e) => e.event === 'entries')
            .flatMap((e) => (JSON.parse(e.data).messages as Array<{ entry: { id: string } }>).map((m) => m.entry))
            .sort((x, y) => x.id.localeCompare(y.id));
        await waitFor(() => entries(again).length === entries(s.conn).length, { what: `the re-push of ${s.address}` });
        expect(entries(again)).toEqual(entries(s.conn));
      }
    } finally {
      for (const s of streams) s.conn.close();
    }
  });
});
