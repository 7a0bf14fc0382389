import { spawn } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { openSqlite, parseSqliteDriverChoice, sqliteDriverAvailable, sqliteErrorCode, type SqliteDatabase } from '../../../src/hub/server/sqlite-driver.js';
import { collect, repoRoot } from '../../helpers/cli.js';
import { tempEnv, type TempEnv } from '../../helpers/env.js';
import { waitFor } from '../../helpers/wait.js';
import { eachSqliteDriver } from './sqlite-drivers.js';

// The Hub's one SQLite driver, on each engine this Node can load (node:sqlite on 22.16+/24,
// better-sqlite3 where its binary matches this Node): the same answers from both, on real
// database files.

describe.each(eachSqliteDriver())('SQLite driver $driver', ({ driver }) => {
  let dir: string;
  let db: SqliteDatabase;
  const open: SqliteDatabase[] = [];
  const openHere = (name = 'test.sqlite'): SqliteDatabase => {
    const d = openSqlite(path.join(dir, name), driver);
    open.push(d);
    return d;
  };

  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'oh-hai-sqlite-'));
    db = openHere();
    db.exec('CREATE TABLE note (id INTEGER PRIMARY KEY, text TEXT, n INTEGER)');
  });
  afterEach(() => {
    for (const d of open.splice(0)) {
      try {
        d.close();
      } catch {
        // closed by the test itself
      }
    }
    rmSync(dir, { recursive: true, force: true });
  });

  const texts = () => (db.prepare('SELECT text FROM note ORDER BY id').all() as { text: string }[]).map((r) => r.text);
  const insert = (text: string) => db.prepare('INSERT INTO note (text) VALUES (?)').run(text);

  it('names itself, and a statement runs, gets, reads all and iterates with plain rows', () => {
    expect(db.driver).toBe(driver);
    expect(insert('a')).toEqual({ changes: 1, lastInsertRowid: 1 });
    expect(db.prepare('INSERT INTO note (text, n) VALUES (?, ?)').run('b', 2)).toEqual({ changes: 1, lastInsertRowid: 2 });
    expect(db.prepare('UPDATE note SET n = ? WHERE n IS NULL').run(7).changes).toBe(1);
    expect(db.prepare('SELECT id, text, n FROM note WHERE id = ?').get(2)).toEqual({ id: 2, text: 'b', n: 2 });
    expect(db.prepare('SELECT * FROM note WHERE id = ?').get(99)).toBeUndefined();
    expect(db.prepare('SELECT text, n FROM note ORDER BY id').all()).toEqual([
      { text: 'a', n: 7 },
      { text: 'b', n: 2 },
    ]);
    expect([...db.prepare('SELECT id FROM note WHERE id >= ? ORDER BY id').iterate(1)]).toEqual([{ id: 1 }, { id: 2 }]);
    // Rows serialise as plain objects (node:sqlite's have a null prototype).
    expect(JSON.stringify(db.prepare('SELECT text FROM note WHERE id = 1').get())).toBe('{"text":"a"}');
  });

  it('runs a statement that returns no rows whichever way it is called: get() undefined, all() and iterate() nothing', () => {
    insert('a');
    const update = db.prepare('UPDATE note SET n = coalesce(n, 0) + 1 WHERE id = ?');
    expect(update.get(1)).toBeUndefined();
    expect(update.all(1)).toEqual([]);
    expect([...update.iterate(1)]).toEqual([]);
    expect(db.prepare('SELECT n FROM note WHERE id = 1').get()).toEqual({ n: 3 });
  });

  it('binds undefined as NULL, and a blob, a bigint and a real round-trip', () => {
    db.prepare('INSERT INTO note (text, n) VALUES (?, ?)').run(undefined, 1);
    expect(db.prepare('SELECT text FROM note WHERE n = 1').get()).toEqual({ text: null });
    const row = db.prepare('SELECT ? AS b, ? AS big, ? AS r').get(new Uint8Array([1, 2, 3]), 2n ** 40n, 1.5) as { b: Uint8Array; big: number; r: number };
    expect([...row.b]).toEqual([1, 2, 3]);
    expect(row.big).toBe(2 ** 40);
    expect(row.r).toBe(1.5);
  });

  it('sets and reads pragmas: rows for one that answers, none for one that does not', () => {
    expect(db.pragma('journal_mode = WAL')).toEqual([{ journal_mode: 'wal' }]);
    expect(db.pragma('synchronous = FULL')).toEqual([]);
    expect(db.pragma('synchronous')).toEqual([{ synchronous: 2 }]);
    // On by default on both engines (better-sqlite3 builds SQLite so; node:sqlite opens so).
    expect(db.pragma('foreign_keys')).toEqual([{ foreign_keys: 1 }]);
  });

  it('commits a transaction, and rolls back one that throws, rethrowing the very error', () => {
    expect(db.transaction(() => (insert('kept'), db.inTransaction))()).toBe(true);
    expect(db.inTransaction).toBe(false);
    const boom = new Error('boom');
    expect(() =>
      db.transaction(() => {
        insert('lost');
        throw boom;
      })(),
    ).toThrow(boom);
    expect(db.inTransaction).toBe(false);
    expect(texts()).toEqual(['kept']);
  });

  it('nests as a savepoint: an inner throw rolls back only the inner writes', () => {
    db.transaction(() => {
      insert('outer');
      expect(() =>
        db.transaction(() => {
          insert('inner');
          throw new Error('inner fails');
        })(),
      ).toThrow('inner fails');
      db.transaction(() => insert('inner ok'))();
      expect(db.inTransaction).toBe(true);
    })();
    expect(texts()).toEqual(['outer', 'inner ok']);
  });

  it('rolls back a transaction whose COMMIT fails (a deferred foreign key) and reports it', () => {
    db.pragma('foreign_keys = ON');
    db.exec('CREATE TABLE parent (id TEXT PRIMARY KEY); CREATE TABLE child (id TEXT, parent TEXT REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED)');
    let caught: unknown;
    try {
      db.transaction(() => {
        insert('with the orphan');
        db.prepare('INSERT INTO child VALUES (?, ?)').run('c', 'nobody');
      })();
    } catch (e) {
      caught = e;
    }
    expect(String(caught)).toMatch(/FOREIGN KEY constraint failed/);
    expect(sqliteErrorCode(caught)).toBe('SQLITE_CONSTRAINT');
    expect(db.inTransaction).toBe(false);
    expect(texts()).toEqual([]);
  });

  it('when SQLite rolls back the whole transaction itself, a nested unit rethrows without touching a savepoint that is gone', () => {
    // RAISE(ROLLBACK) ends the whole transaction inside the statement, like SQLITE_FULL does.
    db.exec(`CREATE TRIGGER refuse BEFORE INSERT ON note WHEN NEW.text = 'poison' BEGIN SELECT RAISE(ROLLBACK, 'poisoned'); END`);
    let inner: unknown;
    expect(() =>
      db.transaction(() => {
        insert('first');
        try {
          db.transaction(() => insert('poison'))();
        } catch (e) {
          inner = e;
        }
        expect(db.inTransaction).toBe(false);
        throw inner;
      })(),
    ).toThrow('poisoned');
    expect(sqliteErrorCode(inner)).toBe('SQLITE_CONSTRAINT');
    expect(db.inTransaction).toBe(false);
    expect(texts()).toEqual([]);
    db.transaction(() => insert('after'))();
    expect(texts()).toEqual(['after']);
  });

  it('names a unique violation SQLITE_CONSTRAINT and a store another connection holds exclusively SQLITE_BUSY', () => {
    db.exec('CREATE TABLE u (k TEXT UNIQUE)');
    db.prepare('INSERT INTO u VALUES (?)').run('x');
    let unique: unknown;
    try {
      db.prepare('INSERT INTO u VALUES (?)').run('x');
    } catch (e) {
      unique = e;
    }
    expect(sqliteErrorCode(unique)).toBe('SQLITE_CONSTRAINT');
    db.pragma('locking_mode = EXCLUSIVE');
    db.pragma('journal_mode = WAL');
    db.exec('BEGIN EXCLUSIVE; COMMIT');
    const other = openHere();
    other.pragma('busy_timeout = 0');
    let busy: unknown;
    try {
      other.exec('BEGIN EXCLUSIVE; COMMIT');
    } catch (e) {
      busy = e;
    }
    expect(sqliteErrorCode(busy)).toBe('SQLITE_BUSY');
    expect(sqliteErrorCode(new Error('not from SQLite'))).toBeNull();
    expect(sqliteErrorCode(undefined)).toBeNull();
  });

  it('refuses work once closed', () => {
    db.close();
    expect(() => db.prepare('SELECT 1')).toThrow();
  });
});

describe('choosing the driver', () => {
  it('auto takes node:sqlite where this Node has it, else better-sqlite3', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'oh-hai-sqlite-'));
    try {
      const expected = sqliteDriverAvailable('node').ok ? 'node' : 'better-sqlite3';
      const db = openSqlite(path.join(dir, 'auto.sqlite'));
      expect(db.driver).toBe(expected);
      db.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('parses OH_HAI_HUB_SQLITE_DRIVER, naming the variable and the choices when it is wrong', () => {
    expect(parseSqliteDriverChoice(undefined)).toEqual({ ok: true, value: 'auto' });
    expect(parseSqliteDriverChoice(' ')).toEqual({ ok: true, value: 'auto' });
    expect(parseSqliteDriverChoice('node')).toEqual({ ok: true, value: 'node' });
    expect(parseSqliteDriverChoice('better-sqlite3')).toEqual({ ok: true, value: 'better-sqlite3' });
    expect(parseSqliteDriverChoice('sqlite3')).toEqual({
      ok: false,
      reason: 'OH_HAI_HUB_SQLITE_DRIVER must be auto, node or better-sqlite3, got "sqlite3"; unset it to let the Hub pick',
    });
  });
});

// `oh-hai hub serve` from a copy of the built CLI whose node_modules has every package but
// better-sqlite3: what a user has when npm skipped that optional dependency (no prebuilt
// binary for the platform, no compiler).
describe('oh-hai hub serve without better-sqlite3 installed', () => {
  let install: string;
  let t: TempEnv;
  beforeAll(() => {
    install = mkdtempSync(path.join(os.tmpdir(), 'oh-hai-install-'));
    for (const part of ['bin', 'dist']) cpSync(path.join(repoRoot, part), path.join(install, part), { recursive: true, preserveTimestamps: true });
    mkdirSync(path.join(install, 'node_modules'));
    for (const name of readdirSync(path.join(repoRoot, 'node_modules'))) {
      if (name !== 'better-sqlite3') symlinkSync(path.join(repoRoot, 'node_modules', name), path.join(install, 'node_modules', name));
    }
  });
  afterAll(() => rmSync(install, { recursive: true, force: true }));
  beforeEach(() => {
    t = tempEnv();
  });
  afterEach(() => t.cleanup());

  const serve = (env: NodeJS.ProcessEnv = {}) =>
    spawn(process.execPath, [path.join(install, 'bin', 'oh-hai'), 'hub', 'serve', '--port', '0', '--data', path.join(t.root, 'hub')], {
      env: { ...t.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });

  it('OH_HAI_HUB_SQLITE_DRIVER=better-sqlite3 exits 2 sqlite_unavailable, saying the package is not installed', async () => {
    const run = await collect(serve({ OH_HAI_HUB_SQLITE_DRIVER: 'better-sqlite3' }));
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('(exit 2, sqlite_unavailable)');
    expect(run.stderr).toContain('OH_HAI_HUB_SQLITE_DRIVER=better-sqlite3, but the optional package better-sqlite3 is not installed');
    expect(run.stderr).not.toMatch(/\n\s+at /);
  });

  if (sqliteDriverAvailable('node').ok) {
    it(`runs on node:sqlite alone (Node ${process.version}): no native module at all`, async () => {
      const hub = serve();
      const run = collect(hub);
      let seen = '';
      hub.stdout.on('data', (d: string) => (seen += d));
      await waitFor(() => /^hub: listening on http:\/\/\S+$/m.test(seen), { what: 'hub: listening on …' });
      hub.kill('SIGTERM');
      const { code, stdout, stderr } = await run;
      expect(code).toBe(0);
      expect(stdout).toMatch(/^hub: stopped \(SIGTERM\)$/m);
      // Not even Node 22's ExperimentalWarning for node:sqlite.
      expect(stderr).toBe('');
    });
  } else {
    it(`exits 2 sqlite_unavailable on Node ${process.version}, naming both engines and every fix`, async () => {
      const run = await collect(serve());
      expect(run.code).toBe(2);
      expect(run.stderr).toContain('(exit 2, sqlite_unavailable)');
      expect(run.stderr).toContain(`the Hub needs SQLite, and Node ${process.version} has none: this Node has no built-in node:sqlite`);
      expect(run.stderr).toContain('the optional package better-sqlite3 is not installed');
      expect(run.stderr).toContain('Run oh-hai on Node 24 (or 22.16+)');
      expect(run.stderr).toContain('apt-get install build-essential python3');
      expect(run.stderr).not.toMatch(/\n\s+at /);
    });
  }

  it('a value it does not know is exit 2 invalid_setting naming the variable', async () => {
    const run = await collect(serve({ OH_HAI_HUB_SQLITE_DRIVER: 'sqlite3' }));
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('(exit 2, invalid_setting)');
    expect(run.stderr).toContain('OH_HAI_HUB_SQLITE_DRIVER must be auto, node or better-sqlite3, got "sqlite3"');
  });
});
