import { describe, expect, it } from 'vitest';
import { inProcessFixture, statementsRun } from './in-process.js';
import { openSse } from './sse.js';

// Issue 19 (CPU per send): what one send runs in the store, counted, never timed. A send to a
// principal address asked three statements for the recipient's reachability (its last drain, its
// live sessions, whether any session was ever seen); it is one now, so a send is the credential
// read outside the unit and three calls in it: the recipient, its reachability, and the message
// with its entry as ONE locked insert (Tx.insertLocked: one statement on PostgreSQL, the two
// INSERTs in turn on SQLite). The snapshot it records is unchanged.

describe('the statements of one send', () => {
  const f = inProcessFixture('send-cost');
  const { call, streams } = f;

  /** Every statement run while `fn` runs, in a unit (`tx`) or outside one (`read`), as `<where> <sql>`. */
  const counted = async (fn: () => Promise<unknown>): Promise<string[]> => (await statementsRun(f.hub, fn)).map((r) => `${r.where} ${r.sql}`);

  it('a send to a principal address: one read outside the unit, three calls in it (the message and its entry one locked insert)', async () => {
    const sender = await call(f.human, 'POST', '/v1/account/agents', { label: 'sender' });
    const recipient = await call(f.human, 'POST', '/v1/account/agents', { label: 'recipient' });
    await call(sender.token, 'POST', '/v1/messages', { to: `agent:${recipient.agent.id}`, intent: 'notify', text: 'warm' });
    // As for a token not remembered (its first request, or OH_HAI_HUB_CREDENTIAL_CACHE_MS passed): the credential is read.
    f.hub.core.credentials.forgetAll();
    const seen = await counted(() => call(sender.token, 'POST', '/v1/messages', { to: `agent:${recipient.agent.id}`, intent: 'notify', text: 'counted' }));
    const where = seen.map((s) => s.split(' ')[0]);
    expect(
      where.filter((w) => w === 'read'),
      seen.join('\n'),
    ).toHaveLength(1);
    expect(
      where.filter((w) => w === 'tx'),
      seen.join('\n'),
    ).toHaveLength(3);
    expect(seen.filter((s) => s.startsWith('tx locked insert'))).toEqual(['tx locked insert messages + entries']);
    expect(
      seen.filter((s) => /principal_presence/.test(s)),
      'reachability in one statement',
    ).toHaveLength(1);
  });

  it('the principal snapshot: unknown before anything was seen, online after a drain or with a stream open, offline once the drain is old', async () => {
    const sender = await call(f.human, 'POST', '/v1/account/agents', { label: 'snap-sender' });
    const recipient = await call(f.human, 'POST', '/v1/account/agents', { label: 'snap-recipient' });
    const to = `agent:${recipient.agent.id}`;
    const snapshot = async (): Promise<string> =>
      (await call(sender.token, 'POST', '/v1/messages', { to, intent: 'notify', text: 'snapshot' })).message.destination.snapshot as string;
    expect(await snapshot()).toBe('unknown');
    await call(recipient.token, 'GET', '/v1/inbox?limit=1');
    expect(await snapshot()).toBe('online');
    await f.hub.core.store.write((tx) => tx.run('UPDATE principal_presence SET seen_at = 0 WHERE agent_id = ?', recipient.agent.id));
    expect(await snapshot()).toBe('offline');
    const session = (await call(recipient.token, 'POST', '/v1/sessions', { client_key: 'snap' })).session;
    const conn = await openSse(`${f.hub.url}/v1/inbox/stream?session=${session.id}`, { token: recipient.token });
    streams.push(conn);
    await conn.next((e) => e.event === 'open');
    expect(await snapshot()).toBe('online');
  });
});
