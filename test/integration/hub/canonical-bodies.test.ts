import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canonicalJson, verifyMac, type Entry } from '../../../src/hub/contract/index.js';
import { STORE_FILE } from '../../../src/hub/server/files.js';
import type { HubServer } from '../../../src/hub/server/server.js';
import { openSqlite } from '../../../src/hub/server/sqlite-driver.js';
import { callHub, inProcessHub } from './in-process.js';
import { waitFor } from '../../helpers/wait.js';
import { openSse } from './sse.js';

// Issue 19: entries are stored as their canonical JSON and signed as stored (entries.canonical = 1).
// A store an earlier build wrote has no such column and bodies in build order: the Hub adds the
// column when it opens the store, and still signs those rows over their canonical form, so a
// consumer verifies mail queued before an upgrade.

interface Delivery {
  entry: Entry;
  signature: string;
}

describe('entries stored canonical, and rows of an earlier build', () => {
  let dir: string;
  let hub: HubServer | null = null;

  const call = (token: string, method: string, p: string, body?: unknown) => callHub(hub!, token, method, p, body);

  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'oh-hai-canonical-'));
  });

  afterAll(async () => {
    await hub?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a send stores the canonical body; a store without the column gains it, and its old rows verify on a drain and a stream', async () => {
    hub = await inProcessHub(dir);
    const human = readFileSync(hub.humanTokenPath!, 'utf8').trim();
    const sender = await call(human, 'POST', '/v1/account/agents', { label: 'sender' });
    const recipient = await call(human, 'POST', '/v1/account/agents', { label: 'recipient' });
    for (const text of ['before the upgrade', 'also before', 'a third']) {
      await call(sender.token, 'POST', '/v1/messages', { to: `agent:${recipient.agent.id}`, intent: 'notify', text });
    }
    const stored = await hub.core.store.read.all<{ body: string; canonical: number | null }>('SELECT body, canonical FROM entries ORDER BY seq');
    expect(stored).toHaveLength(3);
    for (const r of stored) {
      expect(r.canonical).toBe(1);
      expect(r.body).toBe(canonicalJson(JSON.parse(r.body)));
    }
    await hub.close();
    hub = null;

    // What an earlier build left: no canonical column, bodies in the order the fields were built.
    const db = openSqlite(path.join(dir, 'hub', STORE_FILE));
    const rows = db.prepare('SELECT id, body FROM entries').all() as { id: string; body: string }[];
    const buildOrder = (e: Entry): string => {
      const { id, kind, from, to, created_at, ...rest } = e as Entry & Record<string, unknown>;
      return JSON.stringify({ id, kind, from, to, created_at, ...rest });
    };
    for (const r of rows) db.prepare('UPDATE entries SET body = ? WHERE id = ?').run(buildOrder(JSON.parse(r.body) as Entry), r.id);
    db.exec('ALTER TABLE entries DROP COLUMN canonical');
    db.close();

    hub = await inProcessHub(dir);
    const reopened = await hub.core.store.read.all<{ body: string; canonical: number | null }>('SELECT body, canonical FROM entries ORDER BY seq');
    expect(reopened.map((r) => r.canonical)).toEqual([null, null, null]);
    expect(reopened.every((r) => r.body !== canonicalJson(JSON.parse(r.body)))).toBe(true);

    // A drain hands over the principal mailbox's first entry; a stream on a session claims the rest.
    const drained = (await call(recipient.token, 'GET', '/v1/inbox?limit=1')).messages as Delivery[];
    expect(drained).toHaveLength(1);
    const session = (await call(recipient.token, 'POST', '/v1/sessions', { client_key: 'after-upgrade' })).session;
    const conn = await openSse(`${hub.url}/v1/inbox/stream?session=${session.id}`, { token: recipient.token });
    try {
      const streamed = (): Delivery[] =>
        conn.events.filter((e) => e.event === 'entries').flatMap((e) => (JSON.parse(e.data) as { messages: Delivery[] }).messages);
      await waitFor(() => new Set(streamed().map((d) => d.entry.id)).size === 3 || undefined, { what: 'the three entries on the stream' });
      for (const d of [...drained, ...streamed()]) expect(verifyMac('k', d.signature, d.entry), d.entry.id).toBe(true);
    } finally {
      conn.close();
    }
  });
});
