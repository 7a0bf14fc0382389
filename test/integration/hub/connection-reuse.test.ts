import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HubClient } from '../../../src/hub/client/index.js';
import { openSession, scrapeMetrics, startHub, type TestHub } from '../../helpers/hub.js';

// Issue 14: every held stream reconnects at each hold bound (MA2H §5): 10,000 streams at 30 s are
// ~330 connects a second. The Hub answers a stream with `connection: keep-alive` and the bridge's
// client keeps its connections, so a reconnect must ride the connection the last hold ended on,
// not cost the Hub a TCP accept and set-up. Through the client's shared pool it did not: undici
// frees a connection one turn after its answer ends, so the immediate reconnect found it busy and
// opened another, which then idled a whole hold (30 s) — past the Hub's keep-alive timeout (10 s) —
// and was closed: at deploy/'s hold every reconnect was a new connection. Counted on the Hub's side
// (/metrics oh_hai_hub_connections_accepted_total) with the real client: one connection for all.
const HOLD_SECONDS = 0.2;
const CONNECTS = 8;

describe('a stream reconnecting at its hold bound', () => {
  let hub: TestHub;
  let client: HubClient | undefined;
  beforeAll(async () => {
    hub = await startHub({ args: ['--admin-listen', '127.0.0.1:0', '--stream-max-hold-seconds', String(HOLD_SECONDS), '--keepalive-seconds', '5'] });
  });
  afterAll(async () => {
    await client?.close();
    await hub?.dispose();
  });

  it('reconnects over the connection it kept: one TCP connection for every connect', async () => {
    const { token, sessionId } = await openSession(hub, 'reader', 'k');
    // The client makes no other call: every connection the Hub accepts from here on is a stream's.
    client = new HubClient({ baseUrl: hub.url, token });
    const accepted0 = (await scrapeMetrics(hub))('oh_hai_hub_connections_accepted_total');
    let opens = 0;
    for (let i = 0; i < CONNECTS; i++) {
      const end = await client.openStream(sessionId, { onOpen: () => void (opens += 1) });
      expect(end).toEqual({ kind: 'hold_bound' });
    }
    // The scrapes go to the admin port: only the client's connects reach the public listener.
    const accepted = (await scrapeMetrics(hub))('oh_hai_hub_connections_accepted_total') - accepted0;
    console.log(`${CONNECTS} connects (hold ${HOLD_SECONDS} s) over ${accepted} TCP connection(s)`);
    expect(opens).toBe(CONNECTS);
    expect(accepted).toBe(1);
  });
});
