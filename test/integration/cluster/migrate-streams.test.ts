import { readFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { MIGRATING_RETRY_AFTER_SECONDS } from '../../../src/hub/server/database-errors.js';
import { MIGRATION_LOCK, SCHEMA_VERSION } from '../../../src/hub/server/postgres/schema.js';
import { startPair } from '../../helpers/cluster.js';
import { hubCall, startHub, type TestHub } from '../../helpers/hub.js';
import { findNginx } from '../../helpers/nginx.js';
import { freshDatabase, sql } from '../../helpers/postgres.js';
import { waitFor } from '../../helpers/wait.js';
import { agent, bridge, consumerOf, registered, sessionIdOf, spooledEntries, stateDirOf, stopConsumers } from '../bridge/world.js';
import { openSse } from '../hub/sse.js';

// Issue 14 (session 22, drain22): what an instance of the previous version does with its log, its
// open streams and its requests while a newer version's migration holds the tables, and after it.
// Real `hub serve` processes (`--log-format json`) on a real PostgreSQL; a client does what a newer
// migrate() does (postgres/schema.ts): the migration's advisory lock, then tables ACCESS EXCLUSIVE
// in one transaction, which it rolls back (a migration that failed) or commits with the version
// raised (a newer schema).

const CONSUMER = { 'MA2H-Consumer': 'home=h; host=x; pid=1' };
const NEWER = SCHEMA_VERSION + 1;

/** The Hub's log as `--log-format json` writes it: every line one object (a line that is not fails the test). */
const logOf = (hub: TestHub): Array<{ level: string; msg: string }> =>
  (hub.output().stdout + hub.output().stderr)
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as { level: string; msg: string });
const lines = (hub: TestHub, re: RegExp): string[] => logOf(hub).flatMap((l) => (re.test(l.msg) ? [l.msg] : []));

const HOLDS = /^hub: a migration holds the database's tables: pid \d+ \(oh-hai-hub-newer.*; answering 503 \(Retry-After\) until it lets go$/;
const LET_GO = /^hub: the migration let go of the tables; serving again$/;
const OUTDATED = new RegExp(
  `^hub: the database is at schema version ${NEWER}, newer than this Hub's ${SCHEMA_VERSION}: a newer oh-hai migrated it; answering 503 and ending this instance's streams from now on \\(stop it and run the new version\\)$`,
);
/** What background work logged for each refusal before (a line per sweep period, per push). */
const PER_REFUSAL = /^hub: (sweep failed|recording open streams failed|recording the end of|a push on session)/;

describe('an instance of the previous version: its log, its streams and its requests across a newer migration', () => {
  const cleanup: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const c of cleanup.splice(0).reverse()) await c().catch(() => undefined);
  });
  const client = async (url: string, name: string): Promise<pg.Client> => {
    const c = new pg.Client({ connectionString: url, application_name: name });
    await c.connect();
    cleanup.push(() => c.end());
    return c;
  };
  const setUp = async (args: string[] = []) => {
    const db = await freshDatabase();
    cleanup.push(() => db.drop());
    const hub = await startHub({ database: db.url, args: ['--log-format', 'json', ...args] });
    cleanup.push(() => hub.dispose());
    const sender = await hub.mintAgent('sender');
    const reader = await hub.mintAgent('reader');
    const opened = await hubCall(hub, 'POST', '/v1/sessions', { token: reader.token, body: { client_key: 'k', lease_seconds: 300 } });
    expect(opened.status, opened.text).toBe(201);
    const { id: sessionId, address } = opened.body.session as { id: string; address: string };
    const send = (text: string) =>
      hubCall(hub, 'POST', '/v1/messages', { token: sender.token, body: { to: address, intent: 'notify', text, idempotency_key: text } });
    const stream = () => openSse(`${hub.url}/v1/inbox/stream?session=${sessionId}`, { token: reader.token, headers: CONSUMER });
    return { db, hub, reader, sessionId, send, stream };
  };
  /** The tables a migration takes (all but oh_hai_schema, which none locks), `first` first. */
  const tablesOf = async (m: pg.Client, first: string | null = null): Promise<string> => {
    const names = (
      await m.query<{ name: string }>(`SELECT tablename AS name FROM pg_tables WHERE schemaname = current_schema() AND tablename <> 'oh_hai_schema' ORDER BY 1`)
    ).rows.map((r) => r.name);
    return [...names.filter((n) => n === first), ...names.filter((n) => n !== first)].map((n) => `"${n}"`).join(', ');
  };

  it('keeps its streams open while the migration holds the tables, makes the push it refused once it lets go, and logs one line each way', async () => {
    // A hold longer than the test: the entry can only come on this connection from the re-read after the migration.
    const { db, hub, reader, send, stream } = await setUp(['--stream-max-hold-seconds', '120']);
    const sse = await stream();
    expect(sse.status, sse.errorBody).toBe(200);
    await sse.next((e) => e.event === 'open');
    const watch = await client(db.url, 'oh-hai-test-watch');
    const waiting = async (pid: number | null, event: string) =>
      (
        await watch.query(
          `SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event = $1 AND ($2::int IS NULL OR pid = $2)`,
          [event, pid],
        )
      ).rowCount! > 0;

    // The send's commit must wake the stream's page read only once the migration holds the tables, every time:
    // the recipient's lock (postgres/store.ts insertLocked) held here stops the send inside its insert,
    // which holds `entries`; the migration queues for `entries` behind it, so it has the table the moment
    // the send commits, before the page read that commit wakes asks for it. All within the send's 1 s lock wait.
    const agentLock = await client(db.url, 'oh-hai-test-agent-lock');
    await agentLock.query('BEGIN');
    await agentLock.query('SELECT pg_advisory_xact_lock(hashtext($1))', [reader.id]);
    const m = await client(db.url, 'oh-hai-hub-newer');
    const pid = (await m.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    await m.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    const tables = await tablesOf(m, 'entries');
    const sent = send('held');
    await waitFor(() => waiting(null, 'advisory'), { timeoutMs: 10_000, what: 'the send waiting for the recipient lock' });
    await m.query('BEGIN');
    const taking = m.query(`LOCK TABLE ${tables} IN ACCESS EXCLUSIVE MODE`);
    await waitFor(() => waiting(pid, 'relation'), { timeoutMs: 5_000, what: 'the migration queued for entries' });
    await agentLock.query('COMMIT');
    await taking;
    const accepted = await sent;
    expect(accepted.status, accepted.text).toBe(202);

    // The page read that commit woke gives up on the lock and finds the migration.
    await waitFor(() => lines(hub, HOLDS).length === 1, { timeoutMs: 15_000, what: 'the Hub finding the migration' });
    // Several sweep periods (1 s) go by under the migration: the watch asks every second, on its own connection.
    const asked = new Set<string>();
    await waitFor(
      async () => {
        const r = await watch.query<{ at: string }>(
          `SELECT CAST(query_start AS TEXT) AS at FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'oh-hai-hub-probe' AND query LIKE '%pg_locks%'`,
        );
        for (const row of r.rows) asked.add(row.at);
        return asked.size >= 4;
      },
      { timeoutMs: 20_000, what: 'four questions of the migration watch' },
    );
    // The stream is still open, and got nothing: its read was refused.
    expect(sse.isEnded()).toBe(false);
    expect(sse.events.map((e) => e.event)).toEqual(['open']);

    // The migration fails (rolls back): the schema is still this code's.
    await m.query('ROLLBACK');
    await m.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]);
    const pushed = await sse.next((e) => e.event === 'entries', { timeoutMs: 15_000 });
    expect((JSON.parse(pushed.data) as { messages: Array<{ entry: { text: string } }> }).messages.map((d) => d.entry.text)).toEqual(['held']);
    expect(sse.events.map((e) => e.event)).toEqual(['open', 'entries']);
    sse.close();

    expect(lines(hub, HOLDS)).toHaveLength(1);
    expect(lines(hub, LET_GO)).toHaveLength(1);
    expect(lines(hub, PER_REFUSAL)).toEqual([]);
    expect(lines(hub, /internal error/)).toEqual([]);
  }, 90_000);

  it('ends its streams with reconnect "shutdown" and refuses every request once a migration leaves the database newer; the mail waits for the new version', async () => {
    const { db, hub, reader, sessionId, send, stream } = await setUp(['--admin-listen', '127.0.0.1:0']);
    const admin = logOf(hub)
      .map((l) => /^hub: admin \(healthz, readyz, metrics\) at (\S+)$/.exec(l.msg)?.[1])
      .find((u) => u !== undefined)!;
    expect((await send('before')).status).toBe(202);
    const sse = await stream();
    expect(sse.status, sse.errorBody).toBe(200);
    // Pushed, not acknowledged: still pending for whoever reads next.
    const first = await sse.next((e) => e.event === 'entries');
    const entryId = (JSON.parse(first.data) as { messages: Array<{ entry: { id: string } }> }).messages[0]!.entry.id;

    const m = await client(db.url, 'oh-hai-hub-newer');
    await m.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    await m.query('BEGIN');
    await m.query(`LOCK TABLE ${await tablesOf(m)} IN ACCESS EXCLUSIVE MODE`);
    // The sweep's next unit gives up on the lock and finds it.
    await waitFor(() => lines(hub, HOLDS).length === 1, { timeoutMs: 15_000, what: 'the Hub finding the migration' });
    expect(sse.isEnded()).toBe(false);
    await m.query('CREATE TABLE oh_hai_newer (id INTEGER)');
    await m.query('UPDATE oh_hai_schema SET version = $1', [NEWER]);
    await m.query('COMMIT');
    await m.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]);

    // The stream is told to reconnect (elsewhere: through the balancer, to an instance of the new version) and ends.
    const told = await sse.next((e) => e.event === 'reconnect', { timeoutMs: 15_000 });
    expect(JSON.parse(told.data)).toEqual({ reason: 'shutdown' });
    await sse.ended;
    await waitFor(() => lines(hub, OUTDATED).length === 1, { timeoutMs: 5_000, what: 'the outdated line' });

    // From now on every request that needs the database is refused, and a balancer's check says why.
    const refused = await hubCall(hub, 'GET', `/v1/inbox?session=${sessionId}`, { token: reader.token });
    expect(refused.status, refused.text).toBe(503);
    expect(refused.body.error.code).toBe('unavailable');
    expect(refused.body.error.message).toMatch(
      new RegExp(`newer than this Hub's ${SCHEMA_VERSION}: a newer oh-hai migrated it; retry \\(an instance of the newer version serves it\\)$`),
    );
    expect(refused.headers.get('retry-after')).toBe(String(MIGRATING_RETRY_AFTER_SECONDS));
    const again = await stream();
    expect(again.status, again.errorBody).toBe(503);
    const ready = await fetch(`${admin}/readyz`);
    expect(ready.status).toBe(503);
    expect(((await ready.json()) as { reason: string }).reason).toMatch(new RegExp(`^the database is at schema version ${NEWER}, newer than this Hub's`));

    // The new version's instance (played by this code: the version put back, which the old one does not serve again).
    await sql(db.url, 'UPDATE oh_hai_schema SET version = $1', [SCHEMA_VERSION]);
    const next = await startHub({ database: db.url, signingKey: hub.signingKey });
    cleanup.push(() => next.dispose());
    const drained = await hubCall(next, 'GET', `/v1/inbox?session=${sessionId}`, { token: reader.token });
    expect(drained.status, drained.text).toBe(200);
    expect((drained.body.messages as Array<{ entry: { id: string; text: string } }>).map((d) => [d.entry.id, d.entry.text])).toEqual([[entryId, 'before']]);
    const acked = await hubCall(next, 'POST', '/v1/inbox/ack', { token: reader.token, body: { session: sessionId, acknowledged: [entryId] } });
    expect(acked.status, acked.text).toBe(200);
    expect(acked.body.acknowledged).toBe(1);
    expect((await hubCall(hub, 'GET', `/v1/inbox?session=${sessionId}`, { token: reader.token })).status).toBe(503);

    expect(lines(hub, OUTDATED)).toHaveLength(1);
    expect(lines(hub, LET_GO)).toEqual([]);
    expect(lines(hub, PER_REFUSAL)).toEqual([]);
    expect(lines(hub, /internal error/)).toEqual([]);
  }, 90_000);

  it('finds a newer schema that no statement waited for (a migration too short to see) by its version', async () => {
    const { db, hub, stream } = await setUp();
    const sse = await stream();
    expect(sse.status, sse.errorBody).toBe(200);
    await sse.next((e) => e.event === 'open');
    await sql(db.url, 'UPDATE oh_hai_schema SET version = $1', [NEWER]);
    const told = await sse.next((e) => e.event === 'reconnect', { timeoutMs: 10_000 });
    expect(JSON.parse(told.data)).toEqual({ reason: 'shutdown' });
    await waitFor(() => lines(hub, OUTDATED).length === 1, { timeoutMs: 5_000, what: 'the outdated line' });
    expect(lines(hub, HOLDS)).toEqual([]);
  }, 60_000);
});

const noNginx = findNginx() === null ? 'nginx is not installed (Debian: apt-get install nginx; .ci/postgres.sh installs it)' : null;
if (noNginx !== null) console.log(`skipping the bridge-through-nginx migration test: ${noNginx}`);

describe.skipIf(noNginx !== null)('a bridge behind nginx across an upgrade whose migration leaves the database newer', () => {
  const cleanup: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const c of cleanup.splice(0).reverse()) await c().catch(() => undefined);
  });

  it('is told to reconnect by the old instance and goes on, through the balancer, on the new one: same session, nothing lost, nothing doubled', async () => {
    const pair = await startPair({ args: ['--stream-max-hold-seconds', '60'] });
    cleanup.push(() => pair.dispose());
    const { db, a: old, b: next, lb } = pair;
    // `next` plays the instance of the new version: stopped for the upgrade, started once the database is migrated.
    await next.stop();
    const balanced: TestHub = { ...old, url: lb.url };
    // A budget that outlasts the upgrade's gap (no instance serves between the old one retiring and the new one's start).
    const ag = await agent(balanced, { OH_HAI_BACKOFF_MIN_MS: '500', OH_HAI_BACKOFF_MAX_MS: '1000', OH_HAI_MAX_RETRIES: '60' });
    cleanup.push(async () => {
      await stopConsumers(ag);
      ag.temp.cleanup();
    });
    const dir = stateDirOf(ag, balanced, 'upgrade');
    expect((await bridge(ag, 'upgrade', ['--wait', '0'])).code).toBe(0);
    const sess = await registered(dir);
    const sender = await old.mintAgent('sender');
    const accepted: string[] = [];
    // Through the balancer, each with its key, sent again after a refusal (a 503, or nginx's 502 while no instance serves).
    const send = async (text: string): Promise<void> => {
      const r = await waitFor(
        async () => {
          const res = await hubCall(lb, 'POST', '/v1/messages', {
            token: sender.token,
            body: { to: `agent:${ag.id}#${sess}`, intent: 'notify', text, idempotency_key: text },
          });
          // Thrown, so a timeout says what the last try was answered.
          if (res.status !== 202 && res.status !== 200) throw new Error(`${res.status} ${res.text}`);
          return res;
        },
        { timeoutMs: 30_000, what: `${text} accepted` },
      );
      if (r.status === 202) accepted.push(r.body.message.id as string);
    };
    const spooledIds = (): string[] => spooledEntries(dir).map((e) => e.messageId);
    for (let i = 0; i < 10; i++) await send(`before-${i}`);
    await waitFor(() => spooledIds().length >= 10, { timeoutMs: 30_000, what: '10 entries spooled' });

    // The new version's migration commits (too short to wait for: found by the version).
    await sql(db.url, 'UPDATE oh_hai_schema SET version = $1', [NEWER]);
    await waitFor(() => /^hub: the database is at schema version \d+, newer than this Hub's/m.test(old.output().stderr), {
      timeoutMs: 10_000,
      what: 'the old instance retiring',
    });
    // The new version's instance starts (played by this code: the version put back, which the old one does not serve again).
    await sql(db.url, 'UPDATE oh_hai_schema SET version = $1', [SCHEMA_VERSION]);
    await next.restart();
    for (let i = 0; i < 10; i++) await send(`after-${i}`);
    await waitFor(() => spooledIds().length >= 20, { timeoutMs: 45_000, what: '20 entries spooled' });

    const ids = spooledIds();
    expect(ids.length, 'an entry spooled twice').toBe(20);
    expect([...ids].sort()).toEqual([...accepted].sort());
    expect(sessionIdOf(dir)).toBe(sess);
    // Still running: its budget was not spent (a bridge whose budget runs out exits 13).
    expect(() => process.kill(consumerOf(dir)!.pid, 0)).not.toThrow();
    // The old instance told the bridge's stream to go: the bridge logged the Hub's `shutdown` as a fault and went on.
    expect(readFileSync(path.join(dir, 'bridge.log'), 'utf8')).toMatch(/the Hub is shutting down \(event: reconnect \{"reason":"shutdown"\}\)/);
    const refused = await hubCall(old, 'POST', '/v1/messages', { token: sender.token, body: { to: `agent:${ag.id}#${sess}`, intent: 'notify', text: 'late' } });
    expect(refused.status, refused.text).toBe(503);
  }, 120_000);
});
