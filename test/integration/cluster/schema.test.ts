import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate, SCHEMA_VERSION } from '../../../src/hub/server/postgres/schema.js';
import { openStore, type Db } from '../../../src/hub/server/store.js';
import { freshDatabase } from '../../helpers/postgres.js';

// Issue 14: the Hub's tables have two texts, the SQLite store's (src/hub/server/store.ts, evolved
// in place) and PostgreSQL's numbered migrations (src/hub/server/postgres/schema.ts, never edited
// once released), because neither can be generated from the other's latest form. This proves
// they describe ONE schema: both are built from empty, read back from the databases' own
// catalogues, and compared table by table.

/** What both stores must agree on, in a form both catalogues can be read into. */
interface Table {
  /** name, type class, a collation other than bytes, NOT NULL — in declaration order. */
  columns: string[];
  primaryKey: string[];
  /** Column lists of the unique constraints (the primary key aside), sorted. */
  unique: string[];
  /** Index name → its columns (unique constraints and the primary key aside). */
  indexes: Record<string, string>;
}
type Schema = Record<string, Table>;

/** The two dialects' names for the one set of types the queries rely on. */
function typeClass(declared: string): string {
  const t = declared.toLowerCase();
  if (t === 'integer' || t === 'bigint') return 'integer';
  if (t === 'real' || t === 'double precision') return 'real';
  if (t === 'text') return 'text';
  throw new Error(`a column type neither store should use: ${declared}`);
}

/**
 * A text column's collation where it is not byte order, as ` collate <name>`: SQLite's columns declare none
 * (BINARY, bytes); PostgreSQL's compare as bytes only under "C" — its default is the database's locale, whose
 * order of ids is not SQLite's, and whose comparisons go through strcoll (migration 7).
 */
const collation = (name: string | null): string => (name === 'C' ? '' : ` collate ${name ?? 'default'}`);

/** A partial index's condition as ` where …`, in one spelling for both catalogues (PostgreSQL's parenthesised, SQLite's as written); '' for a whole-table index. */
function partial(definition: string): string {
  const where = / WHERE (.*)$/is.exec(definition)?.[1];
  return where === undefined ? '' : ` where ${where.replace(/[()]/g, '').replace(/\s+/g, ' ').trim().toLowerCase()}`;
}

function sqliteSchema(db: Db): Schema {
  const all = <T>(sql: string) => db.prepare(sql).all() as T[];
  const out: Schema = {};
  for (const { name } of all<{ name: string }>(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name`)) {
    const cols = all<{ name: string; type: string; notnull: number; pk: number }>(`PRAGMA table_info(${name})`);
    const declared = all<{ sql: string }>(`SELECT sql FROM sqlite_master WHERE name = '${name}'`)[0]!.sql;
    if (/\bCOLLATE\b/i.test(declared)) throw new Error(`a collation SQLite's columns should not declare (they compare as bytes): ${declared}`);
    const primaryKey = cols
      .filter((c) => c.pk > 0)
      .sort((a, b) => a.pk - b.pk)
      .map((c) => c.name);
    const t: Table = {
      // SQLite lets a non-INTEGER primary key hold NULL; PostgreSQL's is NOT NULL. The Hub never stores one.
      columns: cols.map((c) => `${c.name} ${typeClass(c.type)}${c.notnull === 1 || c.pk > 0 ? ' not null' : ''}`),
      primaryKey,
      unique: [],
      indexes: {},
    };
    for (const idx of all<{ name: string; unique: number; origin: string }>(`PRAGMA index_list(${name})`)) {
      const on = all<{ seqno: number; name: string }>(`PRAGMA index_info(${idx.name})`)
        .sort((a, b) => a.seqno - b.seqno)
        .map((c) => c.name)
        .join(', ');
      if (idx.origin === 'pk') continue;
      if (idx.origin === 'u') t.unique.push(on);
      else
        t.indexes[idx.name] =
          `${idx.unique === 1 ? 'unique ' : ''}${on}${partial(all<{ sql: string }>(`SELECT sql FROM sqlite_master WHERE name = '${idx.name}'`)[0]!.sql)}`;
    }
    t.unique.sort();
    out[name] = t;
  }
  return out;
}

async function postgresSchema(c: pg.Client): Promise<Schema> {
  const out: Schema = {};
  const tables = await c.query<{ name: string }>(
    `SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'public' AND table_name <> 'oh_hai_schema' ORDER BY table_name`,
  );
  for (const { name } of tables.rows) {
    const cols = await c.query<{ name: string; type: string; collation: string | null; nullable: string }>(
      `SELECT column_name AS name, data_type AS type, collation_name AS collation, is_nullable AS nullable FROM information_schema.columns
        WHERE table_schema = 'public' AND table_name = $1 ORDER BY ordinal_position`,
      [name],
    );
    const idx = await c.query<{ name: string; primary: boolean; unique: boolean; constraint: boolean; columns: string[]; definition: string }>(
      `SELECT i.relname AS name, x.indisprimary AS primary, x.indisunique AS unique, pg_get_indexdef(x.indexrelid) AS definition,
              EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = x.indexrelid) AS constraint,
              ARRAY(SELECT a.attname FROM unnest(x.indkey) WITH ORDINALITY AS k(attnum, n)
                      JOIN pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = k.attnum ORDER BY k.n)::text[] AS columns
         FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid
         JOIN pg_namespace ns ON ns.oid = t.relnamespace
        WHERE ns.nspname = 'public' AND t.relname = $1`,
      [name],
    );
    const t: Table = {
      columns: cols.rows.map(
        (c) => `${c.name} ${typeClass(c.type)}${typeClass(c.type) === 'text' ? collation(c.collation) : ''}${c.nullable === 'NO' ? ' not null' : ''}`,
      ),
      primaryKey: idx.rows.find((i) => i.primary)?.columns ?? [],
      unique: idx.rows
        .filter((i) => !i.primary && i.constraint)
        .map((i) => i.columns.join(', '))
        .sort(),
      indexes: {},
    };
    for (const i of idx.rows.filter((i) => !i.primary && !i.constraint))
      t.indexes[i.name] = `${i.unique ? 'unique ' : ''}${i.columns.join(', ')}${partial(i.definition)}`;
    out[name] = t;
  }
  return out;
}

describe('one schema in two dialects', () => {
  let dir: string;
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'oh-hai-schema-'));
    db = await freshDatabase();
  });
  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    await db?.drop();
  });

  it('the SQLite store and the PostgreSQL migrations, each built from empty, have the same tables, columns (their collations too), keys and indexes', async () => {
    const lite = openStore(path.join(dir, 'hub'));
    let fromSqlite: Schema;
    try {
      fromSqlite = sqliteSchema(lite);
    } finally {
      lite.close();
    }
    const c = new pg.Client({ connectionString: db.url });
    await c.connect();
    let fromPostgres: Schema;
    try {
      expect(await migrate(c)).toEqual({ from: 0, to: SCHEMA_VERSION });
      fromPostgres = await postgresSchema(c);
    } finally {
      await c.end();
    }
    // Not vacuous: every table the Hub's queries name is there, with the indexes its pages rely on.
    expect(Object.keys(fromSqlite)).toEqual(expect.arrayContaining(['agents', 'entries', 'messages', 'meta', 'operator_stops', 'sessions']));
    expect(fromSqlite.entries!.indexes).toHaveProperty('entries_to_session', 'to_session, state, seq where to_session is not null');
    expect(fromSqlite.entries!.indexes).toHaveProperty('entries_claims', 'claimed_session, state, seq where claimed_session is not null');
    expect(fromSqlite.entries!.columns).toContain('claimed_session text');
    expect(fromPostgres).toEqual(fromSqlite);
  });
});
