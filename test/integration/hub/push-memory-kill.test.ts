import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hubCall, startHub, type TestHub } from '../../helpers/hub.js';
import { waitFor } from '../../helpers/wait.js';
import { openSse, type SseConn } from './sse.js';

// Issue 19 row 3: on SQLite a stream that had seen everything pending is pushed the rows a batch
// inserted from memory (src/hub/server/sqlite-pages.ts RecentEntries), not read back. A row is
// remembered only once its batch's COMMIT returned, so nothing pushed is ever lost to a crash:
// the real Hub killed with SIGKILL under sends (to the session and to the agent's principal
// mailbox, which the stream claims) and acks, then restarted; every pushed message is still there.

interface Pushed {
  entry: { id: string; message_id: string; text: string };
}

describe('reference Hub: a push from memory, and kill -9 under it', () => {
  let hub: TestHub;
  beforeAll(async () => {
    hub = await startHub();
  });
  afterAll(async () => {
    await hub.dispose();
  });

  /** Every message the sender sent to `address`, after the restart. */
  async function sentTo(token: string, address: string): Promise<Set<string>> {
    const ids = new Set<string>();
    let before: string | null = null;
    for (;;) {
      const page: any = (await hubCall(hub, 'GET', `/v1/messages?direction=sent&limit=500${before ? `&before=${before}` : ''}`, { token })).body;
      for (const m of page.messages as { id: string; to: string }[]) if (m.to === address || m.to.startsWith(`${address}#`)) ids.add(m.id);
      if (page.next === null) return ids;
      before = page.next;
    }
  }

  it('pushes only what is durable (5 rounds)', async () => {
    const sender = await hub.mintAgent('memory-sender');
    for (let round = 0; round < 5; round++) {
      const recipient = await hub.mintAgent(`memory-recipient-${round}`);
      const principal = `agent:${recipient.id}`;
      const session = (await hubCall(hub, 'POST', '/v1/sessions', { token: recipient.token, body: { client_key: 'k' } })).body.session as {
        id: string;
        address: string;
      };
      const stream: SseConn = await openSse(`${hub.url}/v1/inbox/stream?session=${session.id}`, { token: recipient.token });
      expect(stream.status).toBe(200);
      const pushed = (): Pushed[] => stream.events.filter((e) => e.event === 'entries').flatMap((e) => (JSON.parse(e.data) as { messages: Pushed[] }).messages);
      let stopping = false;
      let n = 0;
      const sends = async () => {
        while (!stopping) {
          const to = n % 5 === 4 ? principal : session.address;
          try {
            await hubCall(hub, 'POST', '/v1/messages', { token: sender.token, body: { to, intent: 'notify', text: `r${round}-${n++}` } });
          } catch {
            return; // the Hub died under this request
          }
        }
      };
      // Acks between sends: batches that change entries already pushed.
      let acked = 0;
      const acks = async () => {
        while (!stopping) {
          const ids = pushed()
            .slice(acked)
            .map((d) => d.entry.id);
          if (ids.length === 0) {
            await new Promise((r) => setImmediate(r));
            continue;
          }
          acked += ids.length;
          try {
            await hubCall(hub, 'POST', '/v1/inbox/ack', { token: recipient.token, body: { session: session.id, acknowledged: ids } });
          } catch {
            return;
          }
        }
      };
      const workers = [...Array.from({ length: 8 }, sends), acks()];
      const killAfter = 20 + round * 7;
      await waitFor(() => pushed().length >= killAfter || undefined, { what: `round ${round}: ${killAfter} pushed`, timeoutMs: 60_000 });
      await hub.kill('SIGKILL');
      stopping = true;
      await Promise.all(workers);
      stream.close();
      const seen = pushed();
      await hub.restart();
      const durable = await sentTo(sender.token, principal);
      expect(
        seen.filter((d) => !durable.has(d.entry.message_id)).map((d) => d.entry.text),
        `round ${round}: pushed but not durable`,
      ).toEqual([]);
      // Each pushed once on this connection (a redelivery would come on the next connect).
      expect(new Set(seen.map((d) => d.entry.id)).size, `round ${round}: pushed twice`).toBe(seen.length);
    }
  }, 300_000);
});
