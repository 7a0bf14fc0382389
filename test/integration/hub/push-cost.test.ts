import { describe, expect, it } from 'vitest';
import type { Param, Sql, Store } from '../../../src/hub/server/sql.js';
import { waitFor } from '../../helpers/wait.js';
import { inProcessFixture } from './in-process.js';
import { openSse } from './sse.js';

// Issue 19 (CPU per send): a send to one session used to wake every stream of the agent, and
// each woken stream read its mailbox twice (the second page always empty), each read a unit of
// the group commit. Counted, never timed: with streams open on four sessions of the recipient,
// N sends to one of them read N mailbox pages, one per push.

const SENDS = 12;
const SESSIONS = 4;

describe('a push reads one page, on the one stream it is for', () => {
  const f = inProcessFixture('push-cost');
  const { call, streams } = f;

  it(`${SENDS} sends to one of ${SESSIONS} streamed sessions of an agent read ${SENDS} mailbox pages`, async () => {
    const sender = await call(f.human, 'POST', '/v1/account/agents', { label: 'sender' });
    const recipient = await call(f.human, 'POST', '/v1/account/agents', { label: 'recipient' });
    const sessions = [];
    for (let i = 0; i < SESSIONS; i++) sessions.push((await call(recipient.token, 'POST', '/v1/sessions', { client_key: `s${i}` })).session);
    // Every statement passes here, in a unit or outside one: a mailbox page is the read of a
    // session's own pending entries (its own statement on SQLite, part of the batched one on PostgreSQL).
    let pages = 0;
    const counting = (q: Sql): Sql => ({
      ...q,
      all: async <T>(sql: string, ...p: Param[]) => {
        if (/WHERE to_session = CAST\(\? AS TEXT\) AND state = 'pending' AND seq > \?/.test(sql)) pages += 1;
        return q.all<T>(sql, ...p);
      },
    });
    const store = f.hub.core.store as { write: Store['write']; read: Sql };
    const write = store.write.bind(store);
    const read = store.read;
    store.write = (unit) => write((tx) => unit({ ...tx, ...counting(tx) }));
    store.read = counting(read);
    for (const s of sessions) {
      const conn = await openSse(`${f.hub.url}/v1/inbox/stream?session=${s.id}`, { token: recipient.token });
      await conn.next((e) => e.event === 'open');
      streams.push(conn);
    }
    // Each connect reads its first page (empty).
    await waitFor(() => pages === SESSIONS || undefined, { what: 'the first pages' });
    pages = 0;
    const pushed = () => streams[0]!.events.filter((e) => e.event === 'entries').length;
    try {
      for (let i = 0; i < SENDS; i++) {
        await call(sender.token, 'POST', '/v1/messages', { to: sessions[0].address, intent: 'notify', text: `push ${i}` });
        await waitFor(() => pushed() === i + 1 || undefined, { what: `push ${i}` });
      }
      // One more turn for any page a wake-up might still run.
      await new Promise((r) => setTimeout(r, 50));
    } finally {
      store.write = write;
      store.read = read;
    }
    console.log(`${SENDS} sends, ${SESSIONS} streams of the recipient open: ${pages} mailbox pages read`);
    expect(streams.slice(1).map((s) => s.events.filter((e) => e.event === 'entries').length)).toEqual([0, 0, 0]);
    expect(pages).toBe(SENDS);
  });
});
