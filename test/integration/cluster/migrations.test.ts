import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatAddress } from '../../../src/hub/contract/index.js';
import { defaultHubConfig } from '../../../src/hub/server/config.js';
import { hasPending, insertEntry, pendingPage, readSessionPages, releaseClaims } from '../../../src/hub/server/entries.js';
import { parseDatabaseUrl } from '../../../src/hub/server/postgres/index.js';
import { migrate, MIGRATIONS, SCHEMA_VERSION } from '../../../src/hub/server/postgres/schema.js';
import { createHubServer, type HubServer } from '../../../src/hub/server/server.js';
import { systemClock } from '../../../src/util/clock.js';
import { storeOnOneConnection, type OneConnection } from '../../helpers/pg-store.js';
import { sql, TEST_DATABASE_URL, withDatabase } from '../../helpers/postgres.js';
import { callHub, inProcessHub, notifyEntry } from '../hub/in-process.js';

// Issue 14 (session 18): migration 7 makes every text column compare as bytes (COLLATE "C") and the
// index of claimed principal mail partial (`WHERE claimed_session IS NOT NULL`). The databases here are
// made with an ICU locale (en-US), whose order of ids is not their bytes' ("agt_a" before "agt_B"),
// as a deployment's database made with a language's locale would be: the cluster's C.UTF-8 orders
// ASCII as bytes already and would show no difference.

/** A fresh database ordering text as en-US does; `drop` removes it. */
async function localeDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const admin = process.env[TEST_DATABASE_URL]!;
  const name = `oh_hai_${randomBytes(6).toString('hex')}`;
  await sql(admin, `CREATE DATABASE ${name} TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en-US'`);
  return {
    url: withDatabase(admin, name),
    drop: () => sql(admin, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).then(() => undefined),
  };
}

/** Ids whose byte order (B, Z, a, b) is not en-US's (a, b, B, Z). */
const IDS = ['agt_b', 'agt_Z', 'agt_a', 'agt_B'];
const BYTE_ORDER = ['agt_B', 'agt_Z', 'agt_a', 'agt_b'];

describe('PostgreSQL schema 7: an upgrade from 6 with data in it', () => {
  let db: Awaited<ReturnType<typeof localeDatabase>>;
  let c: pg.Client;
  beforeAll(async () => {
    db = await localeDatabase();
    c = new pg.Client({ connectionString: db.url });
    await c.connect();
  });
  afterAll(async () => {
    await c?.end();
    await db?.drop();
  });

  /** Every row of every table, in key order. */
  const rows = async () => {
    const out: Record<string, unknown[]> = {};
    const bytes = (column: string) => `${column} COLLATE "C"`;
    for (const [table, key] of Object.entries({
      meta: bytes('key'),
      agents: bytes('id'),
      sessions: bytes('id'),
      messages: 'seq',
      entries: 'seq',
      web_sessions: bytes('id_hash'),
    }))
      out[table] = (await c.query(`SELECT * FROM ${table} ORDER BY ${key}`)).rows;
    return out;
  };

  it('keeps every row, orders ids as bytes, and indexes claimed principal mail only', async () => {
    // The database as a Hub of schema 6 left it (migrate's own bookkeeping, stopped at 6).
    await c.query('CREATE TABLE oh_hai_schema (version INTEGER NOT NULL)');
    for (const m of MIGRATIONS.slice(0, 6)) await c.query(m);
    await c.query('INSERT INTO oh_hai_schema (version) VALUES (6)');
    await c.query(`INSERT INTO meta (key, value) VALUES ('account_id', 'acct_1')`);
    for (const [i, id] of IDS.entries())
      await c.query('INSERT INTO agents (id, label, token_hash, revoked, created_at) VALUES ($1, $2, $3, 0, 1)', [id, `label ${id}`, `hash ${i}`]);
    await c.query(`INSERT INTO sessions (id, agent_id, name, client_key, home, state, lease_seconds, expires_at, last_renewed_at, created_at)
                   VALUES ('sess_1', 'agt_a', 'one', 'key', '/home/a', 'active', 60, 9000000000000, 1, 1)`);
    await c.query(`INSERT INTO messages (id, intent, from_addr, from_agent, to_addr, to_agent, to_session, text, created_at, state, track, destination)
                   VALUES ('msg_1', 'notify', 'agent:agt_B', 'agt_B', 'agent:agt_a#sess_1', 'agt_a', 'sess_1', 'hi', 1, 'accepted', 'delivery', 'session')`);
    // Session mail, principal mail claimed by sess_1, principal mail nobody claimed.
    await c.query(`INSERT INTO entries (id, kind, body, to_agent, to_session, claimed_session, message_id, created_at, state) VALUES
                   ('ent_1', 'message', '{}', 'agt_a', 'sess_1', NULL, 'msg_1', 1, 'pending'),
                   ('ent_2', 'message', '{}', 'agt_a', NULL, 'sess_1', NULL, 1, 'pending'),
                   ('ent_3', 'message', '{}', 'agt_a', NULL, NULL, NULL, 1, 'pending')`);
    await c.query(`INSERT INTO web_sessions (id_hash, sealed, last_seen_at, created_at) VALUES ('h', 'sealed', 1, 1)`);
    const before = await rows();
    expect((await c.query<{ id: string }>('SELECT id FROM agents ORDER BY id')).rows.map((r) => r.id)).toEqual(['agt_a', 'agt_b', 'agt_B', 'agt_Z']);

    expect(await migrate(c)).toEqual({ from: 6, to: SCHEMA_VERSION });

    expect(await rows()).toEqual(before);
    expect((await c.query<{ id: string }>('SELECT id FROM agents ORDER BY id')).rows.map((r) => r.id)).toEqual(BYTE_ORDER);
    const notBytes = await c.query(
      `SELECT table_name, column_name, collation_name FROM information_schema.columns
        WHERE table_schema = 'public' AND data_type = 'text' AND collation_name IS DISTINCT FROM 'C'`,
    );
    expect(notBytes.rows).toEqual([]);
    expect((await c.query(`SELECT to_regclass('entries_claimed') AS old`)).rows).toEqual([{ old: null }]);
    const claims = await c.query<{ def: string; tuples: number }>(
      `SELECT pg_get_indexdef(oid) AS def, reltuples AS tuples FROM pg_class WHERE relname = 'entries_claims'`,
    );
    // Built on the three entries: one index entry, the claimed one's.
    expect(claims.rows).toEqual([
      { def: 'CREATE INDEX entries_claims ON public.entries USING btree (claimed_session, state, seq) WHERE (claimed_session IS NOT NULL)', tuples: 1 },
    ]);
  });
});

describe('PostgreSQL: the statements that read claims read them through the partial index', () => {
  let one: OneConnection;
  const agentId = 'agt_claims';
  const box = { agentId, sessionId: 'sess_c' };
  const bound = { limit: 100, maxBytes: 1 << 20 };
  beforeAll(async () => {
    one = await storeOnOneConnection();
  });
  afterAll(() => one?.close());

  it("plans every `claimed_session = ?` on entries_claims, and the claim on its page's seqs (the pool's generic plans, on a table with statistics)", async () => {
    const { store } = one;
    await store.read.run('SET plan_cache_mode = force_generic_plan');
    await store.write(async (tx) => {
      await tx.run(
        `INSERT INTO sessions (id, agent_id, client_key, state, lease_seconds, expires_at, last_renewed_at, created_at)
         VALUES ('sess_c', ?, 'key', 'active', 60, 9000000000000, 1, 1)`,
        agentId,
      );
      // Other sessions' mail: what fills a deployment's entries table, none of it claimed.
      await tx.run(
        `INSERT INTO entries (id, kind, body, to_agent, to_session, created_at, state)
         SELECT 'ent_fill_' || g, 'message', '{}', 'agt_other', 'sess_' || (g % 200), 1, 'pending' FROM generate_series(1, 4000) AS g`,
      );
      await insertEntry(tx, notifyEntry(formatAddress(agentId, 'sess_c'), 'own'), box, null);
      for (const text of ['principal 1', 'principal 2'])
        await insertEntry(tx, notifyEntry(formatAddress(agentId, null), text), { agentId, sessionId: null }, null);
    });
    await store.read.run('ANALYZE entries');

    const claimed = await store.write((tx) => pendingPage(tx, box, 0, bound));
    expect(claimed.rows.map((r) => r.claimed_session)).toEqual([null, 'sess_c', 'sess_c']);
    const [batched] = await readSessionPages(store.read, [{ box, afterSeq: 0, bound }]);
    expect(batched!.rows).toHaveLength(3);
    expect(await hasPending(store.read, box)).toBe(true);
    await store.write((tx) => releaseClaims(tx, 'sess_c', agentId));

    const prepared = await store.read.all<{ name: string; statement: string; types: string[] }>(
      `SELECT name, statement, parameter_types::text[] AS types FROM pg_prepared_statements WHERE statement LIKE '%claimed_session%'`,
    );
    const plan = async (p: (typeof prepared)[number]) => {
      const args = p.types.map((t) => (t === 'json' ? `'[]'` : t === 'text' ? `'sess_c'` : '0'));
      return (await store.read.all<{ 'QUERY PLAN': string }>(`EXPLAIN (COSTS OFF) EXECUTE ${p.name}(${args.join(', ')})`))
        .map((r) => r['QUERY PLAN'])
        .join('\n');
    };
    const readers = prepared.filter((p) => /WHERE claimed_session = /.test(p.statement));
    // The claimed arm of the page read (one mailbox's form and the batched read's), hasPending's, and the release.
    expect(readers.length).toBeGreaterThanOrEqual(4);
    for (const p of readers)
      expect(await plan(p), p.statement).toMatch(/Index (Only )?Scan using entries_claims on entries|Bitmap Index Scan on entries_claims/);
    // The claim reads its page's rows only: by their seqs, or by the page's span of unclaimed mail.
    const claim = prepared.filter((p) => /SET claimed_session = \$1 WHERE/.test(p.statement));
    expect(claim).toHaveLength(1);
    expect(await plan(claim[0]!), claim[0]!.statement).toMatch(/Index Scan using entries_(pkey|unclaimed) on entries\s+Index Cond: [^\n]*\(seq (= ANY|>=)/);
  });
});

describe('ids in the order of their bytes on both stores', () => {
  let dir: string;
  let db: Awaited<ReturnType<typeof localeDatabase>>;
  const hubs: HubServer[] = [];
  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'oh-hai-id-order-'));
    db = await localeDatabase();
  });
  afterAll(async () => {
    for (const h of hubs) await h.close();
    await db?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  async function onPostgres(): Promise<HubServer> {
    const parsed = parseDatabaseUrl(db.url);
    if (!parsed.ok) throw new Error(parsed.reason);
    return createHubServer({
      config: { ...defaultHubConfig({ dataDir: path.join(dir, 'pg'), signingKey: 'k', version: 'test' }), port: 0, database: parsed.value },
      clock: systemClock,
      pid: process.pid,
      log: () => undefined,
    });
  }

  it("lists the directory's agents and the fleet's sessions of one instant in the same order on SQLite and PostgreSQL: their ids' bytes", async () => {
    const orders: Record<string, { agents: string[]; sessions: string[] }> = {};
    for (const [store, start] of [
      ['sqlite', () => inProcessHub(path.join(dir, 'lite'))],
      ['postgres', onPostgres],
    ] as const) {
      const hub = await start();
      hubs.push(hub);
      const human = readFileSync(hub.humanTokenPath!, 'utf8').trim();
      // One instant for all: only the ids decide their order.
      await hub.core.store.write(async (tx) => {
        for (const [i, id] of IDS.entries()) {
          await tx.run('INSERT INTO agents (id, label, token_hash, revoked, created_at) VALUES (?, ?, ?, 0, 1)', id, id, `hash ${i}`);
          await tx.run(
            `INSERT INTO sessions (id, agent_id, client_key, state, lease_seconds, expires_at, last_renewed_at, created_at)
             VALUES (?, ?, 'key', 'active', 60, 9000000000000, 1, 1)`,
            id.replace('agt_', 'sess_'),
            id,
          );
        }
      });
      const agents = (await callHub(hub, human, 'GET', '/v1/account/agents')).agents as Array<{ id: string }>;
      const fleet = (await callHub(hub, human, 'GET', '/v1/fleet')).sessions as Array<{ session_id: string }>;
      orders[store] = {
        agents: agents.map((a) => a.id).filter((id) => IDS.includes(id)),
        sessions: fleet.map((s) => s.session_id).filter((id) => IDS.includes(id.replace('sess_', 'agt_'))),
      };
    }
    const expected = { agents: BYTE_ORDER, sessions: BYTE_ORDER.map((id) => id.replace('agt_', 'sess_')) };
    expect(orders).toEqual({ sqlite: expected, postgres: expected });
  });
});
