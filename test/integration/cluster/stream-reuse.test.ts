import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HubClient } from '../../../src/hub/client/index.js';
import { startPair, type Pair } from '../../helpers/cluster.js';
import { hubCall } from '../../helpers/hub.js';
import { findNginx } from '../../helpers/nginx.js';
import { waitFor } from '../../helpers/wait.js';

// Issue 14: a stream reconnects at every hold bound over the connection it kept
// (test/integration/hub/connection-reuse.test.ts counts that against a Hub directly). Production
// Hubs sit behind a balancer, which forwards the answer's chunked terminator as it comes from the
// Hub, possibly after the `reconnect` event and in a packet of its own. A client that ends its side
// as soon as it has read `reconnect` (destroying the body) drops the connection whenever the
// terminator is still on its way, and each reconnect is then a new TCP connection to the balancer.
// Counted on nginx's side (the access log's $connection, the shipped config in front of two
// instances) with the real client: one client connection for every connect.

const noNginx = findNginx() === null ? 'nginx is not installed (Debian: apt-get install nginx; .ci/postgres.sh installs it)' : null;
if (noNginx !== null) console.log(`skipping the stream reuse test through nginx: ${noNginx}`);

const HOLD_SECONDS = 0.2;
const CONNECTS = 16;

describe.skipIf(noNginx !== null)('a stream reconnecting at its hold bound through the shipped nginx config', () => {
  let pair: Pair;
  let client: HubClient | undefined;
  beforeAll(async () => {
    pair = await startPair({ args: ['--stream-max-hold-seconds', String(HOLD_SECONDS), '--keepalive-seconds', '5'] });
  });
  afterAll(async () => {
    await client?.close();
    await pair?.dispose();
  });

  it('keeps one client connection to nginx for every connect', async () => {
    const { a, lb } = pair;
    const reader = await a.mintAgent('reader');
    const r = await hubCall(a, 'POST', '/v1/sessions', { token: reader.token, body: { client_key: 'k', lease_seconds: 300 } });
    expect(r.status, r.text).toBe(201);
    const sessionId = r.body.session.id as string;
    // The client makes no other call through nginx: every stream request in its log is this client's.
    client = new HubClient({ baseUrl: lb.url, token: reader.token });
    let opens = 0;
    for (let i = 0; i < CONNECTS; i++) {
      const end = await client.openStream(sessionId, { onOpen: () => void (opens += 1) });
      expect(end).toEqual({ kind: 'hold_bound' });
    }
    const streams = await waitFor(
      () => {
        const logged = lb.requests().filter((q) => q.uri.startsWith('/v1/inbox/stream'));
        return logged.length === CONNECTS ? logged : null;
      },
      { what: `nginx to log the ${CONNECTS} stream requests` },
    );
    const connections = new Set(streams.map((q) => q.connection));
    console.log(`${CONNECTS} connects (hold ${HOLD_SECONDS} s) through nginx over ${connections.size} client connection(s)`);
    expect(opens).toBe(CONNECTS);
    expect(streams.map((q) => q.status)).toEqual(Array(CONNECTS).fill(200));
    expect(connections.size).toBe(1);
    expect(streams.map((q) => q.connectionRequests)).toEqual(Array.from({ length: CONNECTS }, (_, i) => i + 1));
  });
});
