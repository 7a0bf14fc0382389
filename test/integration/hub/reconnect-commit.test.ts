import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hubCall, startHub, type TestHub } from '../../helpers/hub.js';
import { waitFor } from '../../helpers/wait.js';
import { openSse, type SseConn } from './sse.js';

// Issue 14: a stream reconnects at every hold bound (MA2H §5), so at 10,000 streams some stream is
// always between two connections while entries commit. Whatever committed before a connect must be
// in that connect's pages (its first page reads after the renewal, and a wake-up after it is heard):
// an entry accepted while connection k was open (or none was) arrives on k or k + 1, never later —
// later would mean it waited for a whole further hold, a hole in the push. Counted, not timed.
const HOLD_SECONDS = 0.1;
const N = 200;
const WIDE = 4;

describe('a stream reconnecting at its hold bound while entries commit', () => {
  let hub: TestHub;
  beforeAll(async () => void (hub = await startHub({ args: ['--stream-max-hold-seconds', String(HOLD_SECONDS), '--keepalive-seconds', '5'] })));
  afterAll(() => hub?.dispose());

  it('pushes every entry on the connection open when it was accepted, or the next one', async () => {
    const sender = await hub.mintAgent('sender');
    const reader = await hub.mintAgent('reader');
    const r = await hubCall(hub, 'POST', '/v1/sessions', { token: reader.token, body: { client_key: 'k', lease_seconds: 300 } });
    expect(r.status, r.text).toBe(201);
    const session = r.body.session as { id: string; address: string };

    // Connections answered so far (a connection counts from its answer, before its first page).
    let answered = 0;
    /** Message id → the first connection it was pushed on (entries are never acked: each connect pushes them again). */
    const arrivedOn = new Map<string, number>();
    const conns: SseConn[] = [];
    let stop = false;
    const holding = (async () => {
      while (!stop) {
        const c = await openSse(`${hub.url}/v1/inbox/stream?session=${session.id}`, { token: reader.token });
        expect(c.status, c.errorBody).toBe(200);
        const k = ++answered;
        conns.push(c);
        await c.ended;
        for (const e of c.events.filter((x) => x.event === 'entries'))
          for (const m of JSON.parse(e.data).messages as Array<{ entry: { message_id: string } }>)
            if (!arrivedOn.has(m.entry.message_id)) arrivedOn.set(m.entry.message_id, k);
      }
    })();

    /** Message id → connections answered when its 202 came back. */
    const acceptedAt = new Map<string, number>();
    let next = 0;
    await Promise.all(
      Array.from({ length: WIDE }, async () => {
        while (next < N) {
          const i = next++;
          const s = await hubCall(hub, 'POST', '/v1/messages', { token: sender.token, body: { to: session.address, intent: 'notify', text: `m ${i}` } });
          expect(s.status, s.text).toBe(202);
          acceptedAt.set(s.body.message.id as string, answered);
        }
      }),
    );
    await waitFor(() => arrivedOn.size === N || undefined, { timeoutMs: 30_000, what: `all ${N} entries pushed` });
    stop = true;
    for (const c of conns) c.close();
    await holding;

    const late = [...acceptedAt]
      .filter(([id, k]) => arrivedOn.get(id)! > k + 1)
      .map(([id, k]) => `${id}: accepted at connection ${k}, pushed on ${arrivedOn.get(id)}`);
    console.log(`${N} entries over ${answered} connections (hold ${HOLD_SECONDS} s); pushed later than the next connection: ${late.length}`);
    // The sends spanned several bounds, so entries committed around reconnects.
    expect(answered).toBeGreaterThanOrEqual(5);
    expect(late).toEqual([]);
  });
});
