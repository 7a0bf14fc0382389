import { SCHEMA_VERSION } from '../../../src/hub/server/postgres/schema.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { runOhHai } from '../../helpers/cli.js';
import { tempEnv, type TempEnv } from '../../helpers/env.js';
import { startHub, type TestHub } from '../../helpers/hub.js';
import { freshDatabase, sql } from '../../helpers/postgres.js';

// `oh-hai hub serve` on a database: what it refuses at start (and says why, never with the
// password), and N instances starting together on a fresh database migrate it once.

describe('oh-hai hub serve --database: refusals and the first start', () => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let t: TempEnv;
  const hubs: TestHub[] = [];
  beforeAll(async () => {
    db = await freshDatabase();
    t = tempEnv();
  });
  afterEach(async () => {
    for (const h of hubs.splice(0)) await h.dispose();
  });
  afterAll(async () => {
    t?.cleanup();
    await db?.drop();
  });

  const serve = (args: string[], env: NodeJS.ProcessEnv) =>
    runOhHai(['hub', 'serve', '--port', '0', '--data', `${t.root}/data`, ...args], { env: { ...t.env, ...env } });
  const password = () => new URL(db.url).password;

  it('refuses a password in argv (exit 2), naming the fix, without echoing the password', async () => {
    const r = await serve(['--database', db.url], { MA2H_SIGNING_KEY: 'k' });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--database postgres:\/\/oh_hai:\*\*\*@.* carries a password.*OH_HAI_HUB_DATABASE_URL.*PGPASSFILE/);
    expect(r.stdout + r.stderr).not.toContain(password());
  });

  it('refuses a database-backed instance without MA2H_SIGNING_KEY, saying why', async () => {
    const r = await serve([], { OH_HAI_HUB_DATABASE_URL: db.url });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/needs MA2H_SIGNING_KEY: every instance of the deployment must sign deliveries with the same key/);
  });

  it('refuses an unreachable database with exit 2 and the URL redacted', async () => {
    const u = new URL(db.url);
    u.port = '1';
    const r = await serve([], { OH_HAI_HUB_DATABASE_URL: u.toString(), MA2H_SIGNING_KEY: 'k' });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/the database at postgres:\/\/oh_hai:\*\*\*@127\.0\.0\.1:1\/\S+ cannot be used/);
    expect(r.stdout + r.stderr).not.toContain(password());
  });

  it('migrates a fresh database once when three instances start together, and refuses one migrated by a newer Hub', async () => {
    const key = 'shared-key';
    const started = await Promise.all([0, 1, 2].map(() => startHub({ database: db.url, signingKey: key })));
    hubs.push(...started);
    expect(await sql(db.url, 'SELECT version FROM oh_hai_schema')).toEqual([{ version: SCHEMA_VERSION }]);
    // One account: exactly one instance made it (the others found it under the lock).
    expect(started.filter((h) => /created account/.test(h.output().stdout))).toHaveLength(1);
    await sql(db.url, 'UPDATE oh_hai_schema SET version = 99');
    const r = await serve([], { OH_HAI_HUB_DATABASE_URL: db.url, MA2H_SIGNING_KEY: key });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(new RegExp(`is too new: the database has schema version 99, newer than this Hub's ${SCHEMA_VERSION}`));
    await sql(db.url, 'UPDATE oh_hai_schema SET version = $1', [SCHEMA_VERSION]);
  });
});
