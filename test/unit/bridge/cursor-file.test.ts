import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CursorFile } from '../../../src/reader/cursor-file.js';
import { readCursor } from '../../../src/spool/index.js';

let dir = '';
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('the reader cursor, advanced in place', () => {
  it('each step fully replaces the last, and the spool reads it back', () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'oh-hai-cursor-'));
    const file = path.join(dir, 'cursor.json');
    const c = new CursorFile(file);
    c.step({ seq: 123456, offset: 98765432 });
    c.step({ seq: 7, offset: 80 });
    c.close();
    expect(readFileSync(file).length).toBe(64);
    expect(readCursor(dir)).toEqual({ seq: 7, offset: 80 });
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });

  it('takes over a cursor written by the spool (atomic replace) and never leaves its tail behind', () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'oh-hai-cursor-'));
    const file = path.join(dir, 'cursor.json');
    writeFileSync(file, JSON.stringify({ seq: 1, offset: 2 }) + '\n' + ' '.repeat(100), { mode: 0o600 });
    const c = new CursorFile(file);
    c.step({ seq: 3, offset: 4 });
    c.close();
    expect(readFileSync(file).length).toBe(64);
    expect(readCursor(dir)).toEqual({ seq: 3, offset: 4 });
  });

  it('the largest cursor still fits its width', () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'oh-hai-cursor-'));
    const c = new CursorFile(path.join(dir, 'cursor.json'));
    c.step({ seq: Number.MAX_SAFE_INTEGER, offset: Number.MAX_SAFE_INTEGER });
    c.close();
    expect(readCursor(dir)).toEqual({ seq: Number.MAX_SAFE_INTEGER, offset: Number.MAX_SAFE_INTEGER });
  });
});
