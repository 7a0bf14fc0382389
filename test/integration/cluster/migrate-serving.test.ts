import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { READY_DEADLINE_MS } from '../../../src/hub/server/admin.js';
import { MIGRATING_RETRY_AFTER_SECONDS } from '../../../src/hub/server/database-errors.js';
import { MIGRATION_LOCK, SERVING_LOCK_TIMEOUT_MS } from '../../../src/hub/server/postgres/schema.js';
import { hubCall, startHub, type CallResult, type TestHub } from '../../helpers/hub.js';
import { freshDatabase } from '../../helpers/postgres.js';
import { waitFor } from '../../helpers/wait.js';
import { openSse } from '../hub/sse.js';

// Issue 14 (session 20, lock12): while a newer version's migration held the tables, an instance of
// the version before it answered /readyz 200 (its health check reads oh_hai_schema, which no
// migration locks) and each of its requests waited on the locks for the migration's whole length
// (10–16 s at 1,000,000 rows), holding a pool connection, past its client's patience. Here two real
// `hub serve` processes serve one database while a client does what a newer migrate() does: the
// migration's advisory lock, then every table ACCESS EXCLUSIVE. Both instances answer /readyz 503
// with the reason, refuse requests at once with 503 `unavailable` and Retry-After, and serve again
// once it lets go; a sender that retries loses nothing and doubles nothing.

const BEFORE = 10;
const BURST = 40;
const AFTER = 10;

const adminOf = (hub: TestHub): string => {
  const m = /^hub: admin \(healthz, readyz, metrics\) at (\S+)$/m.exec(hub.output().stdout);
  if (!m) throw new Error('the Hub was not started with --admin-listen');
  return m[1]!;
};

describe('instances of the previous version while a newer one migrates', () => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let a: TestHub;
  let b: TestHub;
  let migration: pg.Client | null = null;
  beforeAll(async () => {
    db = await freshDatabase();
    const args = ['--admin-listen', '127.0.0.1:0'];
    a = await startHub({ database: db.url, args });
    b = await startHub({ database: db.url, args, signingKey: a.signingKey });
  });
  afterAll(async () => {
    await migration?.end().catch(() => undefined);
    await b?.dispose();
    await a?.dispose();
    await db?.drop();
  });

  const readyz = async (hub: TestHub) => {
    const started = performance.now();
    const res = await fetch(`${adminOf(hub)}/readyz`);
    return { status: res.status, body: (await res.json()) as { ok: boolean; reason?: string }, ms: performance.now() - started };
  };
  const timed = async (call: () => Promise<CallResult>) => {
    const started = performance.now();
    const r = await call();
    return { ...r, ms: performance.now() - started };
  };

  it('answers /readyz 503 and refuses requests at once while the tables are held, and loses nothing', async () => {
    const sender = await a.mintAgent('sender');
    const reader = await a.mintAgent('reader');
    const opened = await hubCall(b, 'POST', '/v1/sessions', { token: reader.token, body: { client_key: 'k', lease_seconds: 300 } });
    expect(opened.status, opened.text).toBe(201);
    const { id: sessionId, address } = opened.body.session as { id: string; address: string };
    const send = (hub: TestHub, key: string) =>
      timed(() => hubCall(hub, 'POST', '/v1/messages', { token: sender.token, body: { to: address, intent: 'notify', text: key, idempotency_key: key } }));

    for (let i = 0; i < BEFORE; i++) expect((await send(i % 2 === 0 ? a : b, `before-${i}`)).status).toBe(202);

    // What a newer instance's migrate() holds while its migration runs (postgres/schema.ts).
    migration = new pg.Client({ connectionString: db.url, application_name: 'oh-hai-hub-newer' });
    await migration.connect();
    const pid = (await migration.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    await migration.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    const tables = (
      await migration.query<{ name: string }>(`SELECT tablename AS name FROM pg_tables WHERE schemaname = current_schema() AND tablename <> 'oh_hai_schema'`)
    ).rows.map((r) => `"${r.name}"`);
    await migration.query('BEGIN');
    await migration.query(`LOCK TABLE ${tables.join(', ')} IN ACCESS EXCLUSIVE MODE`);
    const held = performance.now();

    // An idle instance: its balancer check says why it is not ready, within the check's deadline.
    const ready = await readyz(a);
    expect(ready.status).toBe(503);
    expect(ready.body.reason).toMatch(new RegExp(`^a migration holds the database's tables: pid ${pid} \\(oh-hai-hub-newer`));
    expect(ready.ms).toBeLessThan(READY_DEADLINE_MS + 1500);
    // ...and its requests that need the tables are refused at once (a drain renews its session).
    const drain = await timed(() => hubCall(a, 'GET', `/v1/inbox?session=${sessionId}`, { token: reader.token }));
    expect(drain.status, drain.text).toBe(503);
    expect(drain.body.error.code).toBe('unavailable');
    expect(drain.ms).toBeLessThan(1000);
    const stream = await openSse(`${a.url}/v1/inbox/stream?session=${sessionId}`, {
      token: reader.token,
      headers: { 'MA2H-Consumer': 'home=h; host=x; pid=1' },
    });
    stream.close();
    expect(stream.status, stream.errorBody).toBe(503);

    // A busy instance nobody warned: a burst of sends, more than its pool holds. The first ones give
    // up on the locks after the serving lock timeout, and the rest are refused as soon as they are seen.
    const burst = await Promise.all(Array.from({ length: BURST }, (_, i) => send(b, `burst-${i}`)));
    for (const r of burst) {
      expect(r.status, r.text).toBe(503);
      expect(r.body.error.code).toBe('unavailable');
      expect(r.body.error.message).toMatch(/^a migration holds the database's tables: pid \d+ .*; retry \(this instance serves again once it ends\)$/);
      expect(r.headers.get('retry-after')).toBe(String(MIGRATING_RETRY_AFTER_SECONDS));
    }
    const slowest = Math.max(...burst.map((r) => r.ms));
    expect(slowest).toBeLessThan(SERVING_LOCK_TIMEOUT_MS + 1500);
    expect((await readyz(b)).status).toBe(503);

    // All of it while the migration still held the tables, and for longer than any answer took.
    expect(
      (await migration.query(`SELECT count(*)::int AS n FROM pg_locks WHERE pid = $1 AND mode = 'AccessExclusiveLock' AND granted`, [pid])).rows[0]!.n,
    ).toBeGreaterThan(0);
    expect(performance.now() - held).toBeGreaterThan(slowest);

    await migration.query('ROLLBACK');
    await migration.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]);
    for (const hub of [a, b])
      await waitFor(async () => (await readyz(hub)).status === 200, { timeoutMs: 15_000, what: '/readyz 200 once the migration let go' });

    // The sender retries what was refused, with the same keys: each is accepted once.
    for (let i = 0; i < BURST; i++) expect((await send(i % 2 === 0 ? a : b, `burst-${i}`)).status).toBe(202);
    for (let i = 0; i < AFTER; i++) expect((await send(i % 2 === 0 ? a : b, `after-${i}`)).status).toBe(202);

    const drained = await hubCall(b, 'GET', `/v1/inbox?session=${sessionId}&limit=100`, { token: reader.token });
    expect(drained.status, drained.text).toBe(200);
    const texts = (drained.body.messages as Array<{ entry: { text: string } }>).map((d) => d.entry.text);
    const expected = [
      ...Array.from({ length: BEFORE }, (_, i) => `before-${i}`),
      ...Array.from({ length: BURST }, (_, i) => `burst-${i}`),
      ...Array.from({ length: AFTER }, (_, i) => `after-${i}`),
    ];
    expect(texts.slice().sort()).toEqual(expected.slice().sort());

    // Each instance said so once when it found the migration, and once when it let go.
    for (const hub of [a, b]) {
      const out = hub.output().stdout + hub.output().stderr;
      expect(out.match(/^hub: a migration holds the database's tables: pid \d+ .*; answering 503 \(Retry-After\) until it lets go$/gm)?.length).toBe(1);
      expect(out.match(/^hub: the migration let go of the tables; serving again$/gm)?.length).toBe(1);
      expect(out).not.toMatch(/internal error|^\s+at /m);
    }
  }, 90_000);
});
