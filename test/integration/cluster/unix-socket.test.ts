import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runOhHai } from '../../helpers/cli.js';
import { tempEnv, type TempEnv } from '../../helpers/env.js';
import { startHub, type TestHub } from '../../helpers/hub.js';
import { freshDatabase, sql } from '../../helpers/postgres.js';

// Issue 14, one machine: an instance may reach PostgreSQL over its Unix-domain socket
// (`?host=<socket directory>` in the URL, as libpq takes it) instead of TCP on loopback — less
// kernel work per round trip on both sides (docs/deploy.md). The URL is the Hub's as given, so
// its password stays redacted in every message whichever way the database is reached.

describe('a Hub on PostgreSQL over a Unix socket (host=/dir in the URL)', () => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let t: TempEnv;
  let hub: TestHub | undefined;
  let socketDir: string;
  beforeAll(async () => {
    db = await freshDatabase();
    t = tempEnv();
    const [row] = await sql<{ unix_socket_directories: string }>(db.url, 'SHOW unix_socket_directories');
    socketDir = row!.unix_socket_directories.split(',')[0]!.trim();
  });
  afterAll(async () => {
    await hub?.dispose();
    t?.cleanup();
    await db?.drop();
  });

  const overSocket = (dir: string) => {
    const u = new URL(db.url);
    u.searchParams.set('host', dir);
    return u.toString();
  };

  it('serves with every connection of its pool and its listener on the socket', async () => {
    hub = await startHub({ database: overSocket(socketDir) });
    expect((await hub.mintAgent('over-unix')).token).toMatch(/\S/);
    // A backend reached over a Unix socket has no client address.
    const backends = await sql<{ unix: number; tcp: number }>(
      db.url,
      `SELECT CAST(count(*) FILTER (WHERE client_addr IS NULL) AS INTEGER) AS unix, CAST(count(*) FILTER (WHERE client_addr IS NOT NULL) AS INTEGER) AS tcp
         FROM pg_stat_activity WHERE datname = $1 AND application_name LIKE 'oh-hai-hub%'`,
      [db.name],
    );
    expect(backends[0]!.tcp).toBe(0);
    expect(backends[0]!.unix).toBeGreaterThan(1);
  });

  it('refuses a socket directory with no server (exit 2), the URL redacted', async () => {
    const r = await runOhHai(['hub', 'serve', '--port', '0', '--data', `${t.root}/data`], {
      env: { ...t.env, OH_HAI_HUB_DATABASE_URL: overSocket(`${t.root}/no-server`), MA2H_SIGNING_KEY: 'k' },
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/the database at postgres:\/\/oh_hai:\*\*\*@127\.0\.0\.1:\d+\/\S+\?host=\S*no-server cannot be used/);
    expect(r.stdout + r.stderr).not.toContain(new URL(db.url).password);
  });
});
