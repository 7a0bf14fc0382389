import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { defaultHubConfig } from '../../../src/hub/server/config.js';
import { parseDatabaseUrl } from '../../../src/hub/server/postgres/index.js';
import { migrate, MIGRATIONS, SCHEMA_VERSION } from '../../../src/hub/server/postgres/schema.js';
import { createHubServer } from '../../../src/hub/server/server.js';
import { systemClock } from '../../../src/util/clock.js';
import { freshDatabase } from '../../helpers/postgres.js';
import { waitFor } from '../../helpers/wait.js';

// Issue 14 (session 20): migration 7 died of a deadlock with the previous version still serving
// (session 19, mig11: 8 tries of 8 at 1,000,000 rows). A principal ack of that version takes
// `entries`, then `messages` (inbox.ts, then track.ts); the migration held `messages` (its ALTER … COLLATE
// rebuilding the indexes) and waited for `entries`; PostgreSQL aborted the migration and the Hub
// exited. Here a client plays that version's transactions against the real migrate(), in both
// orders, and one that never ends.

/** A database as a Hub of schema 6 left it: three messages, each with its entry, to one session. */
async function atSix(url: string): Promise<void> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    await c.query('CREATE TABLE oh_hai_schema (version INTEGER NOT NULL)');
    for (const m of MIGRATIONS.slice(0, 6)) await c.query(m);
    await c.query('INSERT INTO oh_hai_schema (version) VALUES (6)');
    await c.query(`INSERT INTO agents (id, label, token_hash, revoked, created_at) VALUES ('agt_a', 'a', 'hash_a', 0, 1)`);
    await c.query(`INSERT INTO sessions (id, agent_id, client_key, state, lease_seconds, expires_at, last_renewed_at, created_at)
                   VALUES ('sess_a', 'agt_a', 'key', 'active', 60, 9000000000000, 1, 1)`);
    for (const n of [1, 2, 3]) {
      await c.query(
        `INSERT INTO messages (id, intent, from_addr, to_addr, to_agent, to_session, text, created_at, state, track, destination)
         VALUES ($1, 'notify', 'agent:agt_b', 'agent:agt_a#sess_a', 'agt_a', 'sess_a', 'hi', 1, 'delivered', '[]', '{}')`,
        [`msg_${n}`],
      );
      await c.query(
        `INSERT INTO entries (id, kind, body, to_agent, to_session, message_id, created_at, delivered, state)
         VALUES ($1, 'message', '{}', 'agt_a', 'sess_a', $2, 1, 1, 'pending')`,
        [`ent_${n}`, `msg_${n}`],
      );
    }
  } finally {
    await c.end();
  }
}

describe('PostgreSQL migration 7 while an instance of the previous version is serving', () => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  const clients: pg.Client[] = [];
  const connect = async (name: string) => {
    const c = new pg.Client({ connectionString: db.url, application_name: name });
    await c.connect();
    clients.push(c);
    const pid = (await c.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    return { c, pid };
  };
  beforeEach(async () => {
    db = await freshDatabase();
    await atSix(db.url);
  });
  afterEach(async () => {
    for (const c of clients.splice(0)) await c.end().catch(() => undefined);
    await db?.drop();
  });

  /** Resolves once `pid` waits for a lock (as pg_locks shows it), seen from `watcher`. */
  const waitsForLock = (watcher: pg.Client, pid: number, what: string) =>
    waitFor(async () => (await watcher.query('SELECT 1 FROM pg_locks WHERE pid = $1 AND NOT granted', [pid])).rows.length > 0, {
      timeoutMs: 30_000,
      what,
    });

  const settled = <T>(p: Promise<T>) =>
    p.then(
      (value) => ({ value }),
      (error: unknown) => ({ error: error instanceof Error ? error.message : String(error) }),
    );

  /** Every entry's and message's id and state, in id order. */
  const states = async (c: pg.Client) => ({
    entries: (await c.query<{ id: string; state: string }>(`SELECT id, state FROM entries ORDER BY id COLLATE "C"`)).rows,
    messages: (await c.query<{ id: string; state: string }>(`SELECT id, state FROM messages ORDER BY id COLLATE "C"`)).rows,
  });

  /**
   * The previous version's transaction on entry and message `n`, taking `first` while the
   * migration runs and the other table once the migration waits for a lock.
   */
  async function raceOldTransaction(first: 'entries' | 'messages', n: number) {
    const old = await connect('oh-hai-hub-previous');
    const hub = await connect('oh-hai-hub');
    const watcher = await connect('watcher');
    const writes = {
      entries: () => old.c.query(`UPDATE entries SET delivered = 1, state = 'acknowledged' WHERE id = $1`, [`ent_${n}`]),
      messages: () => old.c.query(`UPDATE messages SET state = 'acknowledged', prior = 'delivered' WHERE id = $1`, [`msg_${n}`]),
    };
    await old.c.query('BEGIN');
    await writes[first]();
    const lines: string[] = [];
    const migrating = settled(migrate(hub.c, { log: (line) => lines.push(line) }));
    await waitsForLock(watcher.c, hub.pid, 'the migration to wait for a table the old transaction holds');
    const old2 = settled(writes[first === 'entries' ? 'messages' : 'entries']().then(() => old.c.query('COMMIT')));
    const [migrated, committed] = await Promise.all([migrating, old2]);
    expect({ migrated, committed: 'error' in committed ? committed : 'committed' }).toEqual({
      migrated: { value: { from: 6, to: SCHEMA_VERSION } },
      committed: 'committed',
    });
    const acked = (id: string) => ({ id, state: id.endsWith(`_${n}`) ? 'acknowledged' : id.startsWith('ent') ? 'pending' : 'delivered' });
    expect(await states(watcher.c)).toEqual({
      entries: ['ent_1', 'ent_2', 'ent_3'].map(acked),
      messages: ['msg_1', 'msg_2', 'msg_3'].map(acked),
    });
    return { lines, old };
  }

  it('completes while an ack holds entries and then takes messages, and the ack commits (without the fix: deadlock detected)', async () => {
    await raceOldTransaction('entries', 1);
  });

  it('completes while a transaction holds messages and then takes entries, and it commits: the migration gave its tables back in time', async () => {
    const { lines, old } = await raceOldTransaction('messages', 2);
    // The migration held entries and waited for messages when the old transaction asked for entries: it let go and tried again.
    expect(lines.join('\n')).toMatch(new RegExp(`migration 7 found table messages held by pid ${old.pid} \\(oh-hai-hub-previous`));
  });

  it('refuses after its tries while a transaction holds a table, naming it and who holds it; then migrates once, with N instances starting together', async () => {
    const old = await connect('oh-hai-hub-previous');
    const hub = await connect('oh-hai-hub');
    await old.c.query('BEGIN');
    await old.c.query(`UPDATE entries SET state = 'acknowledged' WHERE id = 'ent_3'`);
    const refused = await settled(migrate(hub.c, { attempts: 2 }));
    expect(refused).toEqual({
      error: expect.stringMatching(/^migration 7 could not take table entries: 2 tries of \d+ ms each over [\d.]+ s found it held by pid \d+/),
    });
    const error = 'error' in refused ? refused.error : '';
    expect(error).toMatch(new RegExp(`by pid ${old.pid} \\(oh-hai-hub-previous( from [^,]+)?, idle in transaction, its transaction open [\\d.]+ s\\)`));
    expect(error).toContain('stop every instance of the previous version before starting this one');
    expect(error).toContain(`SELECT pg_terminate_backend(${old.pid})`);
    // Nothing half done, and the advisory lock given back.
    expect((await hub.c.query('SELECT version FROM oh_hai_schema')).rows).toEqual([{ version: 6 }]);
    await old.c.query('COMMIT');

    const other = await connect('oh-hai-hub-2');
    const both = await Promise.all([migrate(hub.c), migrate(other.c)]);
    expect(both.map((r) => r.from).sort()).toEqual([6, SCHEMA_VERSION]);
    expect((await hub.c.query('SELECT version FROM oh_hai_schema')).rows).toEqual([{ version: SCHEMA_VERSION }]);
  });

  it('a Hub starting meanwhile logs what it waits for, and starts once the transaction ends', async () => {
    const old = await connect('oh-hai-hub-previous');
    await old.c.query('BEGIN');
    await old.c.query(`UPDATE entries SET state = 'acknowledged' WHERE id = 'ent_1'`);
    const parsed = parseDatabaseUrl(db.url);
    if (!parsed.ok) throw new Error(parsed.reason);
    const dir = mkdtempSync(path.join(os.tmpdir(), 'oh-hai-migrate-locks-'));
    const lines: string[] = [];
    const starting = createHubServer({
      config: { ...defaultHubConfig({ dataDir: dir, signingKey: 'k', version: 'test' }), port: 0, database: parsed.value },
      clock: systemClock,
      pid: process.pid,
      log: (line) => lines.push(line),
    });
    const logged = await settled(
      waitFor(() => lines.some((l) => l.startsWith(`hub: migration 7 found table entries held by pid ${old.pid} (oh-hai-hub-previous`)), {
        timeoutMs: 30_000,
        what: 'the Hub to log the table it waits for',
      }),
    );
    await old.c.query('COMMIT');
    const hub = await starting;
    try {
      expect(logged).toEqual({ value: true });
      expect((await old.c.query('SELECT version FROM oh_hai_schema')).rows).toEqual([{ version: SCHEMA_VERSION }]);
      expect((await old.c.query(`SELECT state FROM entries WHERE id = 'ent_1'`)).rows).toEqual([{ state: 'acknowledged' }]);
    } finally {
      await hub.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
