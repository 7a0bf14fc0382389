import { mkdirSync, mkdtempSync, rmSync, rmdirSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FileMemo, ioCounts, resetIoCounts } from '../../../src/spool/index.js';
import type { FileRead } from '../../../src/spool/records.js';
import { writeFileAtomic } from '../../../src/util/fs-durable.js';

const dirs: string[] = [];
const memos: FileMemo<string>[] = [];
afterEach(() => {
  for (const m of memos.splice(0)) m.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function world() {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'oh-hai-memo-'));
  dirs.push(dir);
  const file = path.join(dir, 'session.json');
  const memo = new FileMemo(file, (got: FileRead) => (got.state === 'read' ? got.bytes.toString('utf8') : got.state));
  memos.push(memo);
  const opens = () => ioCounts().opens['session.json'] ?? 0;
  resetIoCounts();
  return { dir, file, memo, opens };
}

describe('FileMemo', () => {
  it('reads a file once and again only after it changed', () => {
    const w = world();
    writeFileAtomic(w.file, 'one');
    expect(w.memo.get()).toBe('one');
    expect(w.memo.get()).toBe('one');
    expect(w.opens()).toBe(1);
    writeFileAtomic(w.file, 'two');
    expect(w.memo.get()).toBe('two');
    expect(w.memo.get()).toBe('two');
    expect(w.opens()).toBe(2);
  });

  it('sees an atomic replace of the same size with the same timestamps (the held version keeps its inode number)', () => {
    const w = world();
    writeFileAtomic(w.file, 'aaa');
    expect(w.memo.get()).toBe('aaa');
    const before = statSync(w.file);
    for (const text of ['bbb', 'ccc']) {
      writeFileAtomic(w.file, text);
      utimesSync(w.file, before.atime, before.mtime);
    }
    expect(w.memo.get()).toBe('ccc');
  });

  it('keeps an absence, and sees the file appear and go', () => {
    const w = world();
    expect(w.memo.get()).toBe('absent');
    expect(w.memo.get()).toBe('absent');
    expect(w.opens()).toBe(0);
    writeFileAtomic(w.file, 'here');
    expect(w.memo.get()).toBe('here');
    rmSync(w.file);
    expect(w.memo.get()).toBe('absent');
  });

  it('does not keep a failed read: a directory in its place is read again each time', () => {
    const w = world();
    mkdirSync(w.file);
    expect(w.memo.get()).toBe('failed');
    expect(w.memo.get()).toBe('failed');
    rmdirSync(w.file);
    writeFileSync(w.file, 'back', { mode: 0o600 });
    expect(w.memo.get()).toBe('back');
  });

  it('sees a change in place by its size', () => {
    const w = world();
    writeFileSync(w.file, 'short', { mode: 0o600 });
    expect(w.memo.get()).toBe('short');
    writeFileSync(w.file, 'longer text');
    expect(w.memo.get()).toBe('longer text');
  });
});
