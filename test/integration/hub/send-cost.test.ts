import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HubServer } from '../../../src/hub/server/server.js';
import type { Param, Sql, Store } from '../../../src/hub/server/sql.js';
import { inProcessHub } from './in-process.js';
import { openSse, type SseConn } from './sse.js';

// Issue 19 (CPU per send): what one send runs in the store, counted, never timed. A send to a
// principal address asked three statements for the recipient's reachability (its last drain, its
// live sessions, whether any session was ever seen); it is one now, so a send is the credential
// read outside the unit and four statements in it. The snapshot it records is unchanged.

describe('the statements of one send', () => {
  let dir: string;
  let hub: HubServer;
  let human: string;
  const streams: SseConn[] = [];

  const call = async (token: string, method: string, p: string, body?: unknown): Promise<Record<string, any>> => {
    const res = await fetch(hub.url + p, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const json = (await res.json()) as Record<string, any>;
    expect(res.status, JSON.stringify(json)).toBeLessThan(300);
    return json;
  };

  /** Every statement run while `fn` runs, in a unit (`tx`) or outside one (`read`). */
  async function counted(fn: () => Promise<unknown>): Promise<string[]> {
    const seen: string[] = [];
    const counting = (q: Sql, where: string): Sql => ({
      get: <T>(sql: string, ...p: Param[]) => (seen.push(`${where} ${sql}`), q.get<T>(sql, ...p)),
      all: <T>(sql: string, ...p: Param[]) => (seen.push(`${where} ${sql}`), q.all<T>(sql, ...p)),
      run: (sql: string, ...p: Param[]) => (seen.push(`${where} ${sql}`), q.run(sql, ...p)),
    });
    const store = hub.core.store as { write: Store['write']; read: Sql };
    const [original, read] = [store.write, store.read];
    const write = original.bind(store);
    store.write = (unit) => write((tx) => unit({ ...tx, ...counting(tx, 'tx') }));
    store.read = counting(read, 'read');
    try {
      await fn();
    } finally {
      store.write = original;
      store.read = read;
    }
    return seen;
  }

  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'oh-hai-send-cost-'));
    hub = await inProcessHub(dir);
    human = readFileSync(hub.humanTokenPath!, 'utf8').trim();
  });

  afterAll(async () => {
    for (const s of streams) s.close();
    await hub?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a send to a principal address: one read outside the unit, four statements in it', async () => {
    const sender = await call(human, 'POST', '/v1/account/agents', { label: 'sender' });
    const recipient = await call(human, 'POST', '/v1/account/agents', { label: 'recipient' });
    await call(sender.token, 'POST', '/v1/messages', { to: `agent:${recipient.agent.id}`, intent: 'notify', text: 'warm' });
    const seen = await counted(() => call(sender.token, 'POST', '/v1/messages', { to: `agent:${recipient.agent.id}`, intent: 'notify', text: 'counted' }));
    const where = seen.map((s) => s.split(' ')[0]);
    expect(
      where.filter((w) => w === 'read'),
      seen.join('\n'),
    ).toHaveLength(1);
    expect(
      where.filter((w) => w === 'tx'),
      seen.join('\n'),
    ).toHaveLength(4);
    expect(
      seen.filter((s) => /principal_presence/.test(s)),
      'reachability in one statement',
    ).toHaveLength(1);
  });

  it('the principal snapshot: unknown before anything was seen, online after a drain or with a stream open, offline once the drain is old', async () => {
    const sender = await call(human, 'POST', '/v1/account/agents', { label: 'snap-sender' });
    const recipient = await call(human, 'POST', '/v1/account/agents', { label: 'snap-recipient' });
    const to = `agent:${recipient.agent.id}`;
    const snapshot = async (): Promise<string> =>
      (await call(sender.token, 'POST', '/v1/messages', { to, intent: 'notify', text: 'snapshot' })).message.destination.snapshot as string;
    expect(await snapshot()).toBe('unknown');
    await call(recipient.token, 'GET', '/v1/inbox?limit=1');
    expect(await snapshot()).toBe('online');
    await hub.core.store.write((tx) => tx.run('UPDATE principal_presence SET seen_at = 0 WHERE agent_id = ?', recipient.agent.id));
    expect(await snapshot()).toBe('offline');
    const session = (await call(recipient.token, 'POST', '/v1/sessions', { client_key: 'snap' })).session;
    const conn = await openSse(`${hub.url}/v1/inbox/stream?session=${session.id}`, { token: recipient.token });
    streams.push(conn);
    await conn.next((e) => e.event === 'open');
    expect(await snapshot()).toBe('online');
  });
});
