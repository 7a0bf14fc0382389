import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { presentedTokenHash } from '../../../src/hub/server/ids.js';
import { defaultHubConfig } from '../../../src/hub/server/config.js';
import { parseDatabaseUrl } from '../../../src/hub/server/postgres/url.js';
import { createHubServer, type HubServer } from '../../../src/hub/server/server.js';
import { presentSession, presentStream } from '../../../src/hub/server/sessions.js';
import { systemClock } from '../../../src/util/clock.js';
import { callHub } from '../hub/in-process.js';
import { hubCall, startHub, type TestHub } from '../../helpers/hub.js';
import { twoInstances } from '../../helpers/cluster.js';
import { freshDatabase, sql } from '../../helpers/postgres.js';
import { waitFor } from '../../helpers/wait.js';
import { openSse, type SseConn } from '../hub/sse.js';

// Issue 14: what a send and a pushed page cost the shared database, COUNTED (never timed), from
// the Hub's own per-work round-trip counter (/metrics oh_hai_hub_db_round_trips_total, by route
// pattern or `push`), so background work (sweeps, presence) running meanwhile is not in it.
// A change that adds a round trip to either path fails here.

/**
 * Auth + messaging switch: none once the sender's token is remembered (OH_HAI_HUB_CREDENTIAL_CACHE_MS,
 * ten minutes here); one read for a token not remembered (its first request, or the bound passed).
 */
const SEND_READS = 0;
/**
 * ONE statement on its own (autocommit, messages.ts insertInOne): the database's clock read inside
 * it, the recipient session with its agent's standing and reachability, the recipient agent's lock
 * (so its entries commit in seq order), INSERT message RETURNING, INSERT entry (data-modifying
 * CTEs, their instants formed from the statement's clock) and the NOTIFY (pg_notify, sent only if
 * it commits). It was 4 in a unit (BEGIN+clock, session with its agent, the lock and the INSERTs,
 * NOTIFY+COMMIT) until session 9, 6 before the lock and the INSERTs were one statement.
 */
const SEND_UNIT = 1;
/**
 * A response (session 10): one read of the ask (its asker and reply session: the statement forms
 * the response's addresses and the asker's reachability from them), then ONE statement as a send's,
 * which also checks the ask under its row lock and marks it answered. It was 8 in a unit (BEGIN+clock,
 * the ask, the asker's session, its row again for reachability, the lock and the INSERTs, the ask's
 * UPDATE, the response read back, NOTIFY+COMMIT).
 */
const RESPOND_READS = 1;
const RESPOND_UNIT = 1;
/** A stream's page of its own entries: one read, no unit; a short page ends the pass. */
const PAGE_READS = 1;
/** A connect's first page: none of its own, the connect's renewal statement reads it (it was PAGE_READS). */
const FIRST_PAGE_READS = 0;
/** A page of principal entries: the read, then BEGIN+clock, one set-based claim, COMMIT. */
const CLAIM_UNIT = 3;
const N = 20;
/**
 * A stream connect, its token remembered or not: ONE statement on its own — the conditional
 * UPDATE … RETURNING (session, lease, holder), the database's clock read inside it (it was
 * BEGIN+clock, the UPDATE, COMMIT: 3), the credential's check inside it (it was a read of its own),
 * and its first page (FIRST_PAGE_READS: it was a read of its own). 3 in all before session 8.
 */
const CONNECT_READS = 0;
const CONNECT_UNIT = 1;
/**
 * Connects made together (in one turn of the Hub's event loop, or while the statement before them waited
 * for a pool connection): ONE statement renews them all, each one's first page included (session 18).
 */
const BATCHED_CONNECTS_UNIT = 1;
/** Streams ended together are recorded in batches: one statement on its own per batch (it was a unit of 3), never more than ends. */
const END_UNIT = 1;

type Trips = Map<string, { unit: number; read: number }>;

/** The Hub's /metrics (it was started with --admin-listen). */
async function metricsOf(h: TestHub): Promise<string> {
  const admin = /^hub: admin \(healthz, readyz, metrics\) at (\S+)$/m.exec(h.output().stdout)![1]!;
  return (await fetch(`${admin}/metrics`)).text();
}

/** Round trips so far, by work and kind. */
async function tripsOf(h: TestHub): Promise<Trips> {
  const out: Trips = new Map();
  for (const m of (await metricsOf(h)).matchAll(/^oh_hai_hub_db_round_trips_total\{work="([^"]+)",kind="(unit|read)"\} (\d+)$/gm)) {
    const n = out.get(m[1]!) ?? { unit: 0, read: 0 };
    n[m[2] as 'unit' | 'read'] = Number(m[3]);
    out.set(m[1]!, n);
  }
  return out;
}

const delta = (before: Trips, after: Trips, work: string) => ({
  unit: (after.get(work)?.unit ?? 0) - (before.get(work)?.unit ?? 0),
  read: (after.get(work)?.read ?? 0) - (before.get(work)?.read ?? 0),
});

describe('database round trips per send and per pushed page (PostgreSQL)', () => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let h: TestHub;
  beforeAll(async () => {
    db = await freshDatabase();
    h = await startHub({ database: db.url, args: ['--admin-listen', '127.0.0.1:0'], env: { OH_HAI_HUB_CREDENTIAL_CACHE_MS: '600000' } });
  });
  afterAll(async () => {
    await h?.dispose();
    await db?.drop();
  });

  const metrics = () => metricsOf(h);
  const trips = () => tripsOf(h);
  const pages = (c: SseConn) => c.events.filter((e) => e.event === 'entries').length;

  it(`a send costs ${SEND_READS + SEND_UNIT} round trips; a pushed page of a session's own mail one; a page of principal mail claims as one set`, async () => {
    const sender = await h.mintAgent('sender');
    const reader = await h.mintAgent('reader');
    const opened = await hubCall(h, 'POST', '/v1/sessions', { token: reader.token, body: { client_key: 'k1', lease_seconds: 300 } });
    expect(opened.status, opened.text).toBe(201);
    const session = opened.body.session as { id: string; address: string };
    const send = async (to: string, text: string) => {
      const r = await hubCall(h, 'POST', '/v1/messages', { token: sender.token, body: { to, intent: 'notify', text } });
      expect(r.status, r.text).toBe(202);
    };

    // The sender's first request reads its credential once; from then on it is remembered.
    let before = await trips();
    await send(session.address, 'first');
    expect(delta(before, await trips(), 'POST /v1/messages')).toEqual({ unit: SEND_UNIT, read: 1 });

    // Sends, no stream open: nothing but the send itself.
    before = await trips();
    for (let i = 0; i < N; i++) await send(session.address, `queued ${i}`);
    expect(delta(before, await trips(), 'POST /v1/messages')).toEqual({ unit: N * SEND_UNIT, read: N * SEND_READS });

    // The human's directive to a session takes the same one statement (its token is remembered or read once).
    before = await trips();
    const directed = await hubCall(h, 'POST', '/v1/directives', { token: h.humanToken, body: { to: session.address, text: 'directive' } });
    expect(directed.status, directed.text).toBe(202);
    expect(delta(before, await trips(), 'POST /v1/directives').unit).toBe(SEND_UNIT);

    // A stream connects onto the backlog: one page carries all N + 2 (read by the connect's own statement), a short page ends the pass.
    before = await trips();
    const stream = await openSse(`${h.url}/v1/inbox/stream?session=${session.id}`, { token: reader.token });
    try {
      await waitFor(() => stream.events.filter((e) => e.event === 'entries').flatMap((e) => JSON.parse(e.data).messages).length === N + 2, {
        timeoutMs: 20_000,
      });
      expect(pages(stream)).toBe(1);
      const opened = await trips();
      expect(delta(before, opened, 'push')).toEqual({ unit: 0, read: FIRST_PAGE_READS });
      // The reader's token is remembered here (its session was registered with it): the connect is ONE statement all the same.
      expect(delta(before, opened, 'GET /v1/inbox/stream')).toEqual({ unit: CONNECT_UNIT, read: CONNECT_READS });
      // The session id in the stream's URL is not looked up as a possible token (no round trip).
      expect(delta(before, opened, 'other')).toEqual({ unit: 0, read: 0 });

      // One send at a time while the stream is open: each send's cost is unchanged, each push one read.
      before = await trips();
      for (let i = 0; i < N; i++) {
        const n = pages(stream);
        await send(session.address, `live ${i}`);
        await waitFor(() => pages(stream) > n, { timeoutMs: 20_000 });
      }
      const after = await trips();
      expect(delta(before, after, 'POST /v1/messages')).toEqual({ unit: N * SEND_UNIT, read: N * SEND_READS });
      // A wake-up that finds its entry already pushed reads once more and pushes nothing: at most one such per send.
      const push = delta(before, after, 'push');
      expect(push.unit).toBe(0);
      expect(push.read).toBeGreaterThanOrEqual(N * PAGE_READS);
      expect(push.read).toBeLessThanOrEqual(2 * N * PAGE_READS);

      // Principal mail: N entries claimed by the stream's session as ONE page, one claim statement.
      // The Hub has let the first stream go before the principal mail is sent (no page of its own runs).
      stream.close();
      await waitFor(async () => (await metrics()).includes('\noh_hai_hub_open_streams 0\n'), { timeoutMs: 20_000 });
      const principal = `agent:${reader.id}`;
      // A send to a principal address is the one statement too (session 10; it was the unit).
      before = await trips();
      for (let i = 0; i < N; i++) await send(principal, `principal ${i}`);
      expect(delta(before, await trips(), 'POST /v1/messages')).toEqual({ unit: N * SEND_UNIT, read: N * SEND_READS });
      before = await trips();
      const again = await openSse(`${h.url}/v1/inbox/stream?session=${session.id}`, { token: reader.token });
      try {
        const texts = () =>
          again.events.filter((e) => e.event === 'entries').flatMap((e) => JSON.parse(e.data).messages.map((m: { entry: { text: string } }) => m.entry.text));
        await waitFor(() => texts().filter((t: string) => t.startsWith('principal')).length === N, { timeoutMs: 20_000 });
        expect(pages(again)).toBe(1);
        // The claim is one statement for all N; a wake-up arriving meanwhile may cost one more (empty) read.
        const d = delta(before, await trips(), 'push');
        expect(d.unit).toBe(CLAIM_UNIT);
        expect(d.read).toBeGreaterThanOrEqual(FIRST_PAGE_READS);
        expect(d.read).toBeLessThanOrEqual(FIRST_PAGE_READS + PAGE_READS);
      } finally {
        again.close();
      }
    } finally {
      stream.close();
    }
  });

  it(`a response costs ${RESPOND_READS + RESPOND_UNIT} round trips, to an asker's session or its principal mailbox; a principal directive ${SEND_UNIT}`, async () => {
    const asker = await h.mintAgent('asker');
    const responder = await h.mintAgent('responder');
    const opened = await hubCall(h, 'POST', '/v1/sessions', { token: asker.token, body: { client_key: 'asker', lease_seconds: 300 } });
    expect(opened.status, opened.text).toBe(201);
    // The responder's token is remembered from here on.
    expect((await hubCall(h, 'GET', '/v1/whoami', { token: responder.token })).status).toBe(200);
    for (const session of [opened.body.session.id as string, undefined]) {
      const ask = await hubCall(h, 'POST', '/v1/messages', {
        token: asker.token,
        body: { to: `agent:${responder.id}`, intent: 'ask', text: 'ping?', session },
      });
      expect(ask.status, ask.text).toBe(202);
      const before = await trips();
      const r = await hubCall(h, 'POST', `/v1/messages/${ask.body.message.id}/respond`, { token: responder.token, body: { text: 'pong' } });
      expect(r.status, r.text).toBe(201);
      expect(r.body.message.state).toBe('queued');
      expect(delta(before, await trips(), 'POST /v1/messages/:id/respond'), `to ${session ?? 'the principal mailbox'}`).toEqual({
        unit: RESPOND_UNIT,
        read: RESPOND_READS,
      });
    }
    const before = await trips();
    const directed = await hubCall(h, 'POST', '/v1/directives', { token: h.humanToken, body: { to: `agent:${asker.id}`, text: 'directive' } });
    expect(directed.status, directed.text).toBe(202);
    expect(delta(before, await trips(), 'POST /v1/directives').unit).toBe(SEND_UNIT);
  });
});

/**
 * A Hub on a fresh database holding streams `holdSeconds`, for the tests of one describe. No
 * presence refresh during a test (every 200 s), so its `presence` work is the streams' ends alone.
 */
function quietHub(holdSeconds: number): { h: () => TestHub; db: () => Awaited<ReturnType<typeof freshDatabase>> } {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let h: TestHub;
  beforeAll(async () => {
    db = await freshDatabase();
    h = await startHub({
      database: db.url,
      args: ['--admin-listen', '127.0.0.1:0', '--presence-seconds', '600', '--holder-stale-seconds', '600', '--stream-max-hold-seconds', String(holdSeconds)],
      // Every connect's own credential read is counted: none is remembered.
      env: { OH_HAI_HUB_CREDENTIAL_CACHE_MS: '0' },
    });
  });
  afterAll(async () => {
    await h?.dispose();
    await db?.drop();
  });
  return { h: () => h, db: () => db };
}

describe('database round trips per stream connect and end (PostgreSQL)', () => {
  const quiet = quietHub(120);
  const trips = () => tripsOf(quiet.h());

  it(`a connect costs ${CONNECT_READS + CONNECT_UNIT} round trips (first and every reconnect of its holder); ends are written in batches`, async () => {
    const [h, db] = [quiet.h(), quiet.db()];
    const reader = await h.mintAgent('reader');
    const K = 8;
    const sessions: Array<{ id: string }> = [];
    for (let i = 0; i < K; i++) {
      const r = await hubCall(h, 'POST', '/v1/sessions', { token: reader.token, body: { client_key: `k${i}`, lease_seconds: 300 } });
      expect(r.status, r.text).toBe(201);
      sessions.push(r.body.session);
    }
    const connect = (id: string, pid: number) =>
      openSse(`${h.url}/v1/inbox/stream?session=${id}`, { token: reader.token, headers: { 'MA2H-Consumer': `home=h-${id}; host=hostA; pid=${pid}` } });
    const opened = async (c: SseConn) => waitFor(() => c.events.some((e) => e.event === 'open') || undefined, { timeoutMs: 20_000 });

    // First connects (no holder yet), then each holder reconnecting over its own stream.
    for (const pass of [1, 2]) {
      const before = await trips();
      const conns: SseConn[] = [];
      for (const s of sessions) {
        const c = await connect(s.id, 100);
        expect(c.status, c.errorBody).toBe(200);
        await opened(c);
        conns.push(c);
      }
      expect(delta(before, await trips(), 'GET /v1/inbox/stream'), `pass ${pass}`).toEqual({ unit: K * CONNECT_UNIT, read: K * CONNECT_READS });
      const seenBefore = await sql<{ id: string; seen_at: string; holder_seen_at: string }>(db.url, 'SELECT id, seen_at, holder_seen_at FROM sessions');
      // The streams end together: their ends (seen until now) are written in batches.
      const endsBefore = await trips();
      for (const c of conns) c.close();
      await waitFor(
        async () => {
          const rows = await sql<{ id: string; seen_at: string; holder_seen_at: string }>(db.url, 'SELECT id, seen_at, holder_seen_at FROM sessions');
          return rows.every((r) => {
            const b = seenBefore.find((x) => x.id === r.id)!;
            return Number(r.seen_at) > Number(b.seen_at) && Number(r.holder_seen_at) > Number(b.holder_seen_at);
          });
        },
        { timeoutMs: 20_000, what: 'every ended stream recorded as seen' },
      );
      const ends = delta(endsBefore, await trips(), 'presence');
      expect(ends.read).toBe(0);
      expect(ends.unit % END_UNIT).toBe(0);
      expect(ends.unit).toBeLessThanOrEqual(K * END_UNIT);
      expect(ends.unit).toBeGreaterThanOrEqual(END_UNIT);
    }
  });
});

describe('a stream reconnecting on its hold bound (PostgreSQL)', () => {
  // Holds of 4 s; the ends gather for 1 s (the cap) before they are written.
  const quiet = quietHub(4);

  it('costs its connect and no write of its end: the connect wrote the session seen later (an end alone is still written)', async () => {
    const [h, db] = [quiet.h(), quiet.db()];
    const reader = await h.mintAgent('reader');
    const K = 4;
    const ids: string[] = [];
    for (let i = 0; i < K; i++) {
      const r = await hubCall(h, 'POST', '/v1/sessions', { token: reader.token, body: { client_key: `k${i}`, lease_seconds: 300 } });
      expect(r.status, r.text).toBe(201);
      ids.push(r.body.session.id);
    }
    const connect = async (id: string) => {
      const c = await openSse(`${h.url}/v1/inbox/stream?session=${id}`, {
        token: reader.token,
        headers: { 'MA2H-Consumer': `home=h-${id}; host=hostA; pid=7` },
      });
      expect(c.status, c.errorBody).toBe(200);
      return c;
    };
    const conns = await Promise.all(ids.map(connect));
    const before = await tripsOf(h);
    // Each stream is told to reconnect at its bound and does so at once, as a bridge does.
    await Promise.all(
      ids.map(async (id, i) => {
        await conns[i]!.next((e) => e.event === 'reconnect', { timeoutMs: 20_000 });
        conns[i] = await connect(id);
      }),
    );
    // Past the ends' gathering (1 s), well before the new connections' bound (4 s).
    await new Promise((r) => setTimeout(r, 2000));
    const after = await tripsOf(h);
    // Reconnects the Hub parses in one turn (or while one statement waits for its connection) share one statement.
    const reconnects = delta(before, after, 'GET /v1/inbox/stream');
    expect(reconnects.read).toBe(K * CONNECT_READS);
    expect(reconnects.unit).toBeGreaterThanOrEqual(CONNECT_UNIT);
    expect(reconnects.unit).toBeLessThanOrEqual(K * CONNECT_UNIT);
    expect(delta(before, after, 'presence')).toEqual({ unit: 0, read: 0 });
    // A stream that ends and does not come back is recorded as seen until its end.
    const seenAt = async () => Number((await sql<{ seen_at: string }>(db.url, 'SELECT seen_at FROM sessions WHERE id = $1', [ids[0]]))[0]!.seen_at);
    const seen = await seenAt();
    for (const c of conns) c.close();
    await waitFor(async () => (await seenAt()) > seen, { timeoutMs: 20_000, what: 'the end written' });
    expect(delta(after, await tripsOf(h), 'presence').unit).toBeGreaterThanOrEqual(END_UNIT);
  });
});

describe('mail accepted by one instance wakes only the streams on another that it can be for (PostgreSQL)', () => {
  const SENDS = 12;
  const SESSIONS = 4;
  const pair = twoInstances(['--admin-listen', '127.0.0.1:0', '--stream-max-hold-seconds', '120']);

  it(`${SENDS} sends through A to one of ${SESSIONS} sessions streamed on B read ${SENDS} pages on B; principal mail wakes each claimer once, and their pages are ONE read`, async () => {
    const [a, b] = [pair.a(), pair.b()];
    const sender = await a.mintAgent('sender');
    const recipient = await a.mintAgent('recipient');
    const streams: SseConn[] = [];
    const texts = (c: SseConn): string[] =>
      c.events
        .filter((e) => e.event === 'entries')
        .flatMap((e) => (JSON.parse(e.data).messages as Array<{ entry: { text: string } }>).map((m) => m.entry.text));
    const send = async (to: string, text: string) => {
      const r = await hubCall(a, 'POST', '/v1/messages', { token: sender.token, body: { to, intent: 'notify', text } });
      expect(r.status, r.text).toBe(202);
    };
    try {
      const sessions: Array<{ id: string; address: string }> = [];
      for (let i = 0; i < SESSIONS; i++) {
        const r = await hubCall(b, 'POST', '/v1/sessions', { token: recipient.token, body: { client_key: `s${i}`, lease_seconds: 300 } });
        expect(r.status, r.text).toBe(201);
        sessions.push(r.body.session);
        const c = await openSse(`${b.url}/v1/inbox/stream?session=${r.body.session.id}`, { token: recipient.token });
        await c.next((e) => e.event === 'open');
        streams.push(c);
      }
      // Each connect's first page has been read once the streams are open and the counter is still.
      let before = await tripsOf(b);
      await waitFor(async () => {
        const now = await tripsOf(b);
        const settled = delta(before, now, 'push').read === 0;
        before = now;
        return settled;
      });
      for (let i = 0; i < SENDS; i++) {
        await send(sessions[0]!.address, `to s0 ${i}`);
        await waitFor(() => texts(streams[0]!).length === i + 1, { what: `push ${i} on B` });
      }
      // A page a late wake-up might still run would show here.
      await new Promise((r) => setTimeout(r, 200));
      const reads = delta(before, await tripsOf(b), 'push').read;
      console.log(`${SENDS} sends via A, ${SESSIONS} streams of the recipient on B: ${reads} pages read on B (waking every stream of the agent read 89 here)`);
      expect(streams.slice(1).map((c) => texts(c).length)).toEqual([0, 0, 0]);
      expect(reads).toBe(SENDS);

      // Principal mail can be for any session of the agent: each stream is woken once, and the
      // streams woken by one NOTIFY read their pages in ONE statement (it was one each); each
      // stream's page holds the entry, each tries to claim it (a unit each), one wins.
      before = await tripsOf(b);
      await send(`agent:${recipient.id}`, 'to whoever claims');
      await waitFor(() => streams.some((c) => texts(c).includes('to whoever claims')), { what: 'the principal entry on one stream' });
      await waitFor(async () => delta(before, await tripsOf(b), 'push').unit >= SESSIONS * CLAIM_UNIT, { what: 'every claimer woken' });
      await new Promise((r) => setTimeout(r, 200));
      expect(delta(before, await tripsOf(b), 'push')).toEqual({ read: PAGE_READS, unit: SESSIONS * CLAIM_UNIT });
      expect(streams.filter((c) => texts(c).includes('to whoever claims')).length).toBe(1);
    } finally {
      for (const c of streams) c.close();
    }
  });
});

describe('the presence refresh of held streams is set-based (PostgreSQL)', () => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let h: TestHub;
  beforeAll(async () => {
    db = await freshDatabase();
    // A refresh every 1/3 s; a holder unseen for 1 s is stale.
    h = await startHub({ database: db.url, args: ['--holder-stale-seconds', '1', '--presence-seconds', '1', '--stream-max-hold-seconds', '60'] });
  });
  afterAll(async () => {
    await h?.dispose();
    await db?.drop();
  });

  it('keeps the sessions and the holders of open streams seen (three streams, one statement each for sessions and holders)', async () => {
    const reader = await h.mintAgent('reader');
    const streams: SseConn[] = [];
    try {
      const names = ['n1', 'n2', 'n3'];
      for (const [i, name] of names.entries()) {
        const home = `holder-${i}`;
        const r = await hubCall(h, 'POST', '/v1/sessions', {
          token: reader.token,
          body: { client_key: `k-${name}`, name, home, host: 'hostA', pid: 100 + i, lease_seconds: 300 },
        });
        expect(r.status, r.text).toBe(201);
        streams.push(
          await openSse(`${h.url}/v1/inbox/stream?session=${r.body.session.id}`, {
            token: reader.token,
            headers: { 'MA2H-Consumer': `home=${home}; host=hostA; pid=${100 + i}` },
          }),
        );
      }
      // Refreshed by the instance, statement by statement for all three: each session and each
      // holder (matched on its home) is seen well after it registered, while no request touched it.
      await waitFor(
        async () => {
          const rows = await sql<{ ok: boolean }>(
            db.url,
            'SELECT (seen_at - created_at >= 1500 AND holder_seen_at - holder_since >= 1500) AS ok FROM sessions',
          );
          return rows.length === 3 && rows.every((r) => r.ok);
        },
        { timeoutMs: 30_000 },
      );
    } finally {
      for (const c of streams) c.close();
    }
  });
});

describe('stream connects made together (PostgreSQL)', () => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let dir = '';
  let hub: HubServer;
  let human = '';
  beforeAll(async () => {
    db = await freshDatabase();
    dir = mkdtempSync(path.join(os.tmpdir(), 'oh-hai-connect-batch-'));
    const database = parseDatabaseUrl(db.url);
    if (!database.ok) throw new Error(database.reason);
    hub = await createHubServer({
      config: { ...defaultHubConfig({ dataDir: path.join(dir, 'hub'), signingKey: 'k', version: 'test' }), port: 0, database: database.value },
      clock: systemClock,
      pid: process.pid,
      log: () => undefined,
    });
    human = readFileSync(hub.humanTokenPath!, 'utf8').trim();
  });
  afterAll(async () => {
    await hub?.close();
    rmSync(dir, { recursive: true, force: true });
    await db?.drop();
  });

  const connects = () => hub.core.store.as({ name: 'GET /v1/inbox/stream', lane: 'connect' });
  const unitsOf = () => (hub.core.store as unknown as { roundTrips: Trips }).roundTrips.get('GET /v1/inbox/stream')?.unit ?? 0;
  const bound = { limit: 100, maxBytes: 1 << 20 };
  /** Connects presented in one turn, as the stream route presents them: each with a consumer of its home, or none (null). */
  const together = (token: string, sessions: string[], homes: Array<string | null>) =>
    Promise.all(
      sessions.map((id, i) => {
        const home = homes[i] ?? null;
        const consumer = home === null ? null : { home, host: 'host', pid: 7 };
        return presentStream(hub.core, connects(), { tokenHash: presentedTokenHash(token) }, id, { consumer, connect: true }, bound);
      }),
    );
  const newSession = async (token: string, key: string): Promise<{ id: string; address: string }> =>
    (await callHub(hub, token, 'POST', '/v1/sessions', { client_key: key, lease_seconds: 300 })).session;

  it(`${BATCHED_CONNECTS_UNIT} round trip for every connect made together, each renewed with its own first page`, async () => {
    const agent = await callHub(hub, human, 'POST', '/v1/account/agents', { label: 'batch' });
    const sender = await callHub(hub, human, 'POST', '/v1/account/agents', { label: 'sender' });
    const sessions = [];
    for (let i = 0; i < 5; i++) sessions.push(await newSession(agent.token, `k${i}`));
    // Session i holds i entries of its own.
    for (const [i, s] of sessions.entries())
      for (let j = 0; j < i; j++) await callHub(hub, sender.token, 'POST', '/v1/messages', { to: s.address, intent: 'notify', text: `to ${i}: ${j}` });
    const before = unitsOf();
    const presented = await together(
      agent.token,
      sessions.map((s) => s.id),
      // The first without a consumer (a plain client): renewed, its holder left as it was (none).
      sessions.map((_, i) => (i === 0 ? null : `home-${i}`)),
    );
    expect(unitsOf() - before).toBe(BATCHED_CONNECTS_UNIT);
    expect(presented.map((p) => p?.row.id)).toEqual(sessions.map((s) => s.id));
    expect(presented.map((p) => p!.page!.rows.map((r) => r.to_session))).toEqual(sessions.map((s, i) => Array.from({ length: i }, () => s.id)));
    const held = await sql<{ id: string; holder_home: string }>(db.url, 'SELECT id, holder_home FROM sessions WHERE agent_id = $1', [agent.agent.id]);
    expect(Object.fromEntries(held.map((r) => [r.id, r.holder_home]))).toEqual(
      Object.fromEntries(sessions.map((s, i) => [s.id, i === 0 ? null : `home-${i}`])),
    );
  });

  it('two consumers of one session in one statement: one is renewed, the other misses and is refused by the locked path', async () => {
    const agent = await callHub(hub, human, 'POST', '/v1/account/agents', { label: 'race' });
    const s = await newSession(agent.token, 'race');
    const before = unitsOf();
    const presented = await together(agent.token, [s.id, s.id], ['home-a', 'home-b']);
    expect(unitsOf() - before).toBe(BATCHED_CONNECTS_UNIT);
    const won = presented.findIndex((p) => p !== null);
    expect(won).toBeGreaterThanOrEqual(0);
    expect(presented.filter((p) => p !== null)).toHaveLength(1);
    const [winner, loser] = won === 0 ? ['home-a', 'home-b'] : ['home-b', 'home-a'];
    const [row] = await sql<{ holder_home: string }>(db.url, 'SELECT holder_home FROM sessions WHERE id = $1', [s.id]);
    expect(row!.holder_home).toBe(winner);
    // The one that missed is decided as any missed renewal is: the holder is seen, so 409.
    const refused = await hub.core.store.write((tx) =>
      presentSession(hub.core, tx, agent.agent.id, s.id, { consumer: { home: loser, host: 'host', pid: 7 }, connect: true }),
    );
    expect(refused.ok ? 'renewed' : refused.error.status).toBe(409);
  });
});
