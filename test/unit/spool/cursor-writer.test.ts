import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CursorWriter, readCursor, readCursorRecord, writeCursor } from '../../../src/spool/index.js';

let dir = '';
afterEach(() => rmSync(dir, { recursive: true, force: true }));
const fresh = () => (dir = mkdtempSync(path.join(os.tmpdir(), 'oh-hai-cursor-')));
const file = () => path.join(dir, 'cursor.json');

describe('cursor.json, written by its one writer', () => {
  it('each step is visible at once and fully replaces the last; commit leaves the same cursor, 0600, no temp file', () => {
    fresh();
    const c = new CursorWriter(dir);
    c.step({ seq: 123456, offset: 98765432 });
    expect(readCursor(dir)).toEqual({ seq: 123456, offset: 98765432 });
    c.step({ seq: 7, offset: 80 });
    expect(readCursor(dir)).toEqual({ seq: 7, offset: 80 });
    c.commit();
    expect(readFileSync(file()).length).toBe(64);
    expect(readCursor(dir)).toEqual({ seq: 7, offset: 80 });
    expect(statSync(file()).mode & 0o777).toBe(0o600);
    expect(readdirSync(dir)).toEqual(['cursor.json']);
  });

  it('steps write into the file the last replace made (same inode), and so does the commit', () => {
    fresh();
    writeCursor(dir, { seq: 1, offset: 2 });
    const before = statSync(file()).ino;
    const c = new CursorWriter(dir);
    c.step({ seq: 3, offset: 4 });
    c.step({ seq: 5, offset: 6 });
    expect(statSync(file()).ino).toBe(before);
    c.commit();
    expect(statSync(file()).ino).toBe(before);
    expect(readCursor(dir)).toEqual({ seq: 5, offset: 6 });
  });

  it('a cursor of another width (an older build wrote it) is replaced, never written over with its tail left behind', () => {
    fresh();
    writeFileSync(file(), JSON.stringify({ seq: 1, offset: 2 }) + '\n' + ' '.repeat(100), { mode: 0o600 });
    const c = new CursorWriter(dir);
    c.step({ seq: 3, offset: 4 });
    expect(readFileSync(file()).length).toBe(64);
    c.commit();
    expect(readCursor(dir)).toEqual({ seq: 3, offset: 4 });
  });

  it('a symlink at cursor.json is replaced by a file, its target left alone', () => {
    fresh();
    const target = path.join(dir, 'elsewhere.json');
    writeFileSync(target, 'x'.repeat(64));
    symlinkSync(target, file());
    const c = new CursorWriter(dir);
    c.step({ seq: 9, offset: 90 });
    c.commit();
    expect(statSync(file()).isFile()).toBe(true);
    expect(readFileSync(target, 'utf8')).toBe('x'.repeat(64));
    expect(readCursorRecord(dir)).toEqual({ state: 'ok', value: { seq: 9, offset: 90 } });
  });

  it('the largest cursor still fits its width', () => {
    fresh();
    const c = new CursorWriter(dir);
    c.step({ seq: Number.MAX_SAFE_INTEGER, offset: Number.MAX_SAFE_INTEGER });
    c.step({ seq: Number.MAX_SAFE_INTEGER, offset: Number.MAX_SAFE_INTEGER });
    c.commit();
    expect(readFileSync(file()).length).toBe(64);
    expect(readCursor(dir)).toEqual({ seq: Number.MAX_SAFE_INTEGER, offset: Number.MAX_SAFE_INTEGER });
  });

  it('writeCursor (the consumer rewinding, a collected read committing) is one atomic replace in the same format', () => {
    fresh();
    writeCursor(dir, { seq: 4, offset: 40 });
    expect(readFileSync(file()).length).toBe(64);
    expect(readCursorRecord(dir)).toEqual({ state: 'ok', value: { seq: 4, offset: 40 } });
  });
});
