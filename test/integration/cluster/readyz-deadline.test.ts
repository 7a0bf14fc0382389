import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { READY_DEADLINE_MS } from '../../../src/hub/server/admin.js';
import { defaultHubConfig } from '../../../src/hub/server/config.js';
import { parseDatabaseUrl } from '../../../src/hub/server/postgres/index.js';
import { createHubServer, type HubServer } from '../../../src/hub/server/server.js';
import { systemClock } from '../../../src/util/clock.js';
import { freshDatabase } from '../../helpers/postgres.js';
import { waitFor } from '../../helpers/wait.js';

// Session 20 (lock12): while a migration held the tables, an old instance's /readyz waited 10–15 s
// (its health() queued in the request lane behind requests stuck on the locks). A balancer's check
// wants a prompt answer: /readyz says 503 within its deadline, and why.
describe('/readyz while the database does not answer', () => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let dir = '';
  let hub: HubServer | null = null;
  let locker: pg.Client | null = null;
  beforeEach(async () => {
    db = await freshDatabase();
    dir = mkdtempSync(path.join(os.tmpdir(), 'oh-hai-readyz-'));
  });
  afterEach(async () => {
    await locker?.end().catch(() => undefined);
    await hub?.close();
    await db?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers 503 within its deadline while oh_hai_schema is locked, and 200 once it is free', async () => {
    const parsed = parseDatabaseUrl(db.url);
    if (!parsed.ok) throw new Error(parsed.reason);
    hub = await createHubServer({
      config: { ...defaultHubConfig({ dataDir: dir, signingKey: 'k', version: 'test' }), port: 0, database: parsed.value },
      clock: systemClock,
      pid: process.pid,
      log: () => undefined,
      adminListen: { host: '127.0.0.1', port: 0 },
    });
    const readyz = async () => {
      const started = performance.now();
      const res = await fetch(`${hub!.adminUrl}/readyz`);
      return { status: res.status, body: (await res.json()) as { ok: boolean; reason?: string }, ms: performance.now() - started };
    };
    expect((await readyz()).status).toBe(200);

    // What a migration's transaction does to every table the health check reads, held far longer than the deadline.
    locker = new pg.Client({ connectionString: db.url });
    await locker.connect();
    await locker.query('BEGIN');
    await locker.query('LOCK TABLE oh_hai_schema IN ACCESS EXCLUSIVE MODE');
    const first = await readyz();
    const second = await readyz();
    expect(first.status).toBe(503);
    // Since session 21 the pool's statements give up on a lock after SERVING_LOCK_TIMEOUT_MS (1 s), under the deadline.
    expect(first.body.reason).toMatch(
      new RegExp(
        `^the database (did not answer within ${READY_DEADLINE_MS} ms \\(its pool busy, or a table locked, e\\.g\\. by another instance's migration\\)|does not answer: canceling statement due to lock timeout)$`,
      ),
    );
    // The deadline plus a loaded machine's slack, well under the 10–15 s seen before.
    expect(first.ms).toBeLessThan(READY_DEADLINE_MS + 1500);
    expect(second.status).toBe(503);
    expect(second.ms).toBeLessThan(READY_DEADLINE_MS + 1500);
    // Still held: the answers came from the deadline (or the lock timeout), not from the lock's end.
    expect(
      (await locker.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_locks WHERE relation = 'oh_hai_schema'::regclass AND granted`)).rows[0]!.n,
    ).toBeGreaterThan(0);

    await locker.query('COMMIT');
    await waitFor(async () => (await readyz()).status === 200, { timeoutMs: 15_000, what: '/readyz to answer 200 once the lock is released' });
  }, 60_000);
});
