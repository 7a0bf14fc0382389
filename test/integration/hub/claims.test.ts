import { describe, expect, it } from 'vitest';
import { claimPage, readPage } from '../../../src/hub/server/entries.js';
import { inProcessFixture } from './in-process.js';

// A stream pages principal mail by claiming it for its session. A page claimed after that
// session ended (its close released the claims a moment before; the stream had not noticed yet)
// was held by a closed session for good: no stream took it and no drain saw it. Seen in a bench
// whose probe stream was closed after its first page: 100 of 300 entries never arrived.

describe('principal mail claimed by a stream', () => {
  const f = inProcessFixture('claims');
  const { call } = f;

  it('is never claimed for a session that has ended: the next reader of the agent gets every entry', async () => {
    const sender = await call(f.human, 'POST', '/v1/account/agents', { label: 'sender' });
    const me = await call(f.human, 'POST', '/v1/account/agents', { label: 'me' });
    const gone = await call(me.token, 'POST', '/v1/sessions', { client_key: 'gone' });
    for (let i = 0; i < 3; i++) await call(sender.token, 'POST', '/v1/messages', { to: `agent:${me.agent.id}`, intent: 'notify', text: `p ${i}` });
    await call(me.token, 'POST', `/v1/sessions/${gone.session.id}/close`);

    // The ended session's stream, one page behind: it read the page and now claims it.
    const store = f.hub.core.store;
    const box = { agentId: me.agent.id as string, sessionId: gone.session.id as string };
    const page = await readPage(store.read, box, 0, { limit: 100, maxBytes: 1 << 20 });
    expect(page.rows.length).toBe(3);
    expect(await store.write((tx) => claimPage(tx, box, page.rows))).toEqual([]);

    const drained = await call(me.token, 'GET', '/v1/inbox?wait=0');
    expect((drained.messages as { entry: { text: string } }[]).map((d) => d.entry.text).sort()).toEqual(['p 0', 'p 1', 'p 2']);
  });
});
