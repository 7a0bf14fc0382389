import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { twoInstances } from '../../helpers/cluster.js';
import { hubCall } from '../../helpers/hub.js';
import { sql } from '../../helpers/postgres.js';
import { waitFor } from '../../helpers/wait.js';
import { openSse } from '../hub/sse.js';

// Issue 14: on PostgreSQL a stream connect's ONE statement renews the lease and reads the first
// page, of the statement's snapshot; the stream listens for wake-ups only once it has answered. An
// entry committed in between (after the snapshot, before the listening) must still be pushed on
// that connection, not wait for the hold bound (120 s here). The connect's renewal is held on the
// session's row lock from SQL, so the entry commits exactly while its statement is in flight.
describe('an entry committed while a stream connect reads its first page (PostgreSQL)', () => {
  const pair = twoInstances(['--stream-max-hold-seconds', '120']);

  for (const via of ['the same instance', 'another instance'] as const) {
    it(`is pushed on that connection when it was sent through ${via}`, async () => {
      const [a, db] = [pair.a(), pair.db()];
      const sender = via === 'the same instance' ? a : pair.b();
      const reader = await a.mintAgent('reader');
      const from = await a.mintAgent('sender');
      const opened = await hubCall(a, 'POST', '/v1/sessions', {
        token: reader.token,
        body: { client_key: via === 'the same instance' ? 'k-same' : 'k-other', lease_seconds: 300 },
      });
      expect(opened.status, opened.text).toBe(201);
      const session = opened.body.session as { id: string; address: string };
      const blocker = new pg.Client({ connectionString: db.url });
      await blocker.connect();
      try {
        await blocker.query('BEGIN');
        // NO KEY UPDATE: it blocks the connect's renewal (an UPDATE of the row) but not the send,
        // whose share lock on its recipient session (FOR KEY SHARE, messages.ts) it does not conflict with.
        await blocker.query('SELECT 1 FROM sessions WHERE id = $1 FOR NO KEY UPDATE', [session.id]);
        const connecting = openSse(`${a.url}/v1/inbox/stream?session=${session.id}`, { token: reader.token });
        // Asked on a connection of its own: inside the blocker's transaction the view stays as first read.
        await waitFor(
          async () => (await sql(db.url, `SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'WITH oh_hai_clock%'`)).length === 1,
          { timeoutMs: 20_000, what: "the connect's statement waiting on the session's row" },
        );
        const sent = await hubCall(sender, 'POST', '/v1/messages', { token: from.token, body: { to: session.address, intent: 'notify', text: 'in flight' } });
        expect(sent.status, sent.text).toBe(202);
        await blocker.query('ROLLBACK');
        const stream = await connecting;
        try {
          expect(stream.status, stream.errorBody).toBe(200);
          const texts = () =>
            stream.events
              .filter((e) => e.event === 'entries')
              .flatMap((e) => (JSON.parse(e.data).messages as Array<{ entry: { text: string } }>).map((m) => m.entry.text));
          await waitFor(() => texts().includes('in flight'), { timeoutMs: 20_000, what: 'the entry pushed on the connection (the hold is 120 s)' });
          expect(stream.events[0]!.event).toBe('open');
          expect(texts()).toEqual(['in flight']);
        } finally {
          stream.close();
        }
      } finally {
        await blocker.end();
      }
    });
  }
});
