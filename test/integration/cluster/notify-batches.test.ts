import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { notifier } from '../../../src/hub/server/postgres/notifier.js';
import { CHANNEL, parsePayload } from '../../../src/hub/server/postgres/wake-payload.js';
import type { WakeTopic } from '../../../src/hub/server/sql.js';
import { hubCall, startHub, type CallResult, type TestHub } from '../../helpers/hub.js';
import { freshDatabase, sql } from '../../helpers/postgres.js';
import { waitFor } from '../../helpers/wait.js';
import { openSse, type SseConn } from '../hub/sse.js';

// Issue 14 (session 14): PostgreSQL serialises the commits of transactions that NOTIFY, so a
// NOTIFY in each send's own commit made every send of every instance commit one at a time. The
// wake-ups now go out after the commit, batched on one notifier connection per instance, and a
// send's answer waits for its batch. Decided by which backend sent each notification and by what a
// stream was pushed, never by a time.

type Db = Awaited<ReturnType<typeof freshDatabase>>;
interface Heard {
  pid: number;
  payload: string;
}

/** A LISTEN on the channel of `url`'s database: every notification, with the backend that sent it. */
async function overhear(url: string): Promise<{ heard: Heard[]; close(): Promise<void> }> {
  const c = new pg.Client({ connectionString: url });
  const heard: Heard[] = [];
  c.on('notification', (n) => heard.push({ pid: n.processId, payload: n.payload ?? '' }));
  await c.connect();
  await c.query(`LISTEN ${CHANNEL}`);
  return { heard, close: () => c.end() };
}

const backends = async (url: string, app: string): Promise<number[]> =>
  (await sql<{ pid: number }>(url, 'SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND datname = current_database()', [app])).map((r) => r.pid);

describe('PostgreSQL: the notifier', () => {
  let db: Db;
  beforeAll(async () => void (db = await freshDatabase()));
  afterAll(() => db?.drop());

  it('sends what is queued while a batch is under way as ONE next batch, its payloads split under the 8,000-byte cap', async () => {
    const ear = await overhear(db.url);
    let statements = 0;
    const notices = notifier({
      connect: () => {
        const c = new pg.Client({ connectionString: db.url });
        const query = c.query.bind(c) as (...a: unknown[]) => unknown;
        (c as unknown as { query: (...a: unknown[]) => unknown }).query = (...a) => {
          statements++;
          return query(...a);
        };
        return c;
      },
      instance: 'inst',
      now: () => Date.now(),
      retryMs: 50,
      failures: { failed: () => {}, worked: () => {} },
    });
    try {
      const key = (i: number): [WakeTopic, string] => ['mail', `agt_${'x'.repeat(30)}#sess_${String(i).padStart(6, '0')}`];
      await notices.send([key(-1)]);
      const first = statements;
      // One send starts a batch; the 50 after it, queued while it is under way, are the next one.
      const many = Array.from({ length: 3000 }, (_, i) => key(i));
      await Promise.all([notices.send([key(-2)]), ...Array.from({ length: 50 }, (_, j) => notices.send(many.slice(j * 60, (j + 1) * 60)))]);
      expect(statements - first).toBe(2);
      await waitFor(() => ear.heard.flatMap((h) => parsePayload(h.payload)!.wakes).length >= 3002 || null, { what: 'every wake-up heard' });
      const items = ear.heard.flatMap((h) => parsePayload(h.payload)!.wakes.map(([t, k]) => `${t}:${k}`));
      expect(new Set(items)).toEqual(new Set([key(-1), key(-2), ...many].map(([t, k]) => `${t}:${k}`)));
      expect(ear.heard.length).toBeGreaterThan(20);
      for (const h of ear.heard) expect(Buffer.byteLength(h.payload)).toBeLessThan(8000);
      expect(new Set(ear.heard.map((h) => h.pid)).size).toBe(1);
    } finally {
      await notices.close();
      await ear.close();
    }
  });
});

/** Far above every wait below: a delivery seen in time was pushed, not picked up by a reconnect. */
const ARGS = ['--stream-max-hold-seconds', '60', '--lease-min-seconds', '1', '--keepalive-seconds', '0.5'];
const PUSH_DEADLINE_MS = 15_000;

describe('two Hub instances: wake-ups leave on the notifier, after the commit, before the answer', () => {
  let db: Db;
  let a: TestHub, b: TestHub;
  beforeAll(async () => {
    db = await freshDatabase();
    // A's notifier, once dropped, stays down for the test: what its sends wait for can be seen.
    a = await startHub({ database: db.url, args: ARGS, env: { OH_HAI_HUB_LISTEN_RETRY_MS: '600000' } });
    b = await startHub({ database: db.url, args: ARGS, signingKey: a.signingKey });
  });
  afterAll(async () => {
    await b?.dispose();
    await a?.dispose();
    await db?.drop();
  });

  const streamOn = async (h: TestHub, label: string) => {
    const agent = await a.mintAgent(label);
    const r = await hubCall(h, 'POST', '/v1/sessions', { token: agent.token, body: { client_key: `k-${label}`, lease_seconds: 120 } });
    expect(r.status, r.text).toBe(201);
    const s = r.body.session as { id: string; address: string };
    const stream = await openSse(`${h.url}/v1/inbox/stream?session=${s.id}`, { token: agent.token });
    expect(stream.status).toBe(200);
    await stream.next((e) => e.event === 'open');
    return { address: s.address, stream };
  };
  const send = (h: TestHub, token: string, to: string, text: string, key?: string) =>
    hubCall(h, 'POST', '/v1/messages', { token, body: { to, intent: 'notify', text, ...(key ? { idempotency_key: key } : {}) } });
  const pushed = (c: SseConn): string[] =>
    c.events.filter((e) => e.event === 'entries').flatMap((e) => (JSON.parse(e.data).messages as { entry: { text: string } }[]).map((d) => d.entry.text));

  it("pushes sends to a stream on the other instance; every notification comes from a notifier's backend, none from a send's", async () => {
    const ear = await overhear(db.url);
    try {
      const sender = await a.mintAgent('batch-sender');
      const { address, stream } = await streamOn(b, 'batch-recipient');
      const texts = Array.from({ length: 30 }, (_, i) => `batched ${i}`);
      const answers = await Promise.all(texts.map((t) => send(a, sender.token, address, t)));
      for (const r of answers) expect(r.status, r.text).toBe(202);
      await waitFor(() => texts.every((t) => pushed(stream).includes(t)), { timeoutMs: PUSH_DEADLINE_MS, what: 'every send pushed across' });
      expect(stream.events.filter((e) => e.event === 'reconnect' || e.event === 'closed')).toEqual([]);
      const notifiers = await backends(db.url, 'oh-hai-hub-notify');
      const pools = await backends(db.url, 'oh-hai-hub');
      expect(notifiers.length).toBe(2);
      expect(pools.length).toBeGreaterThan(0);
      expect(ear.heard.length).toBeGreaterThan(0);
      // A NOTIFY in the send's statement would come from the pool backend that ran it.
      expect(ear.heard.filter((h) => !notifiers.includes(h.pid))).toEqual([]);
      stream.close();
    } finally {
      await ear.close();
    }
  });

  it("answers no send before its wake-up went out; a send committed but untold when its instance is killed is told by the sender's retry", async () => {
    const sender = await a.mintAgent('kill-sender');
    const { address, stream } = await streamOn(b, 'kill-recipient');
    // Cut both notifiers from SQL: B's is back in 500 ms, A's not in this test.
    const cut = await sql<{ ok: boolean }>(
      db.url,
      "SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE application_name = 'oh-hai-hub-notify' AND datname = current_database()",
    );
    expect(cut.length).toBe(2);
    await waitFor(() => /the database notifier failed: dropped/.test(a.output().stderr) || null, { what: "A's notifier to notice the cut" });
    await waitFor(async () => (await backends(db.url, 'oh-hai-hub-notify')).length === 1 || null, { what: "B's notifier back" });

    let answered: CallResult | Error | null = null;
    const first = send(a, sender.token, address, 'committed, untold', 'key-untold').then(
      (r) => (answered = r),
      (e: Error) => (answered = e),
    );
    const [row] = await waitFor(
      async () => {
        const rows = await sql<{ id: string }>(db.url, "SELECT id FROM messages WHERE text = 'committed, untold'");
        return rows.length > 0 ? rows : null;
      },
      { what: 'the send committed' },
    );
    // Committed, and A cannot tell B: the sender has no answer, and B's stream has nothing.
    expect(answered).toBeNull();
    expect(pushed(stream)).not.toContain('committed, untold');

    await a.kill('SIGKILL');
    await first;
    expect(answered).toBeInstanceOf(Error);
    // The sender retries with the same key on another instance: the replay tells the stream.
    const retry = await send(b, sender.token, address, 'committed, untold', 'key-untold');
    expect(retry.status, retry.text).toBe(200);
    expect(retry.body.message.id).toBe(row!.id);
    expect(retry.body.idempotent_replay).toBe(true);
    await waitFor(() => pushed(stream).includes('committed, untold'), { timeoutMs: PUSH_DEADLINE_MS, what: 'the push after the retry' });
    expect(stream.events.filter((e) => e.event === 'reconnect' || e.event === 'closed')).toEqual([]);
    stream.close();
  });
});
