import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { CursorWriter, readCursor, writeCursor } from '../../../src/spool/index.js';
import { io } from '../../helpers/fs-faults.js';

// Which descriptor is written and fsynced is not visible in the file: node:fs is wrapped
// (test/helpers/fs-faults.ts) to record every write and fsync with the file it went to.
vi.mock('node:fs', async (actual) => (await import('../../helpers/fs-faults.js')).faultyFs(await actual()));

let dir = '';
afterEach(() => {
  io.reset();
  rmSync(dir, { recursive: true, force: true });
});

const fresh = () => (dir = mkdtempSync(path.join(os.tmpdir(), 'oh-hai-cursor-')));
const isTemp = (f: string) => /^\.cursor\.json\.\d+\.[0-9a-f]+\.tmp$/.test(f);

describe('cursor.json: what reaches the disk when', () => {
  it('steps are in-place writes with no fsync; the commit fsyncs that same file, no replace', () => {
    fresh();
    writeCursor(dir, { seq: 1, offset: 1 });
    const inode = statSync(path.join(dir, 'cursor.json')).ino;
    io.reset();
    const c = new CursorWriter(dir);
    c.step({ seq: 1, offset: 10 });
    c.step({ seq: 2, offset: 20 });
    const steps = io.since(0);
    expect(steps.map((e) => `${e.op} ${e.file}`)).toEqual(['write cursor.json', 'write cursor.json']);
    expect(new Set(steps.map((e) => e.fd)).size).toBe(1);
    c.commit();
    const commit = io.since(steps.length);
    expect(commit.map((e) => `${e.op} ${e.file}`)).toEqual(['fsync cursor.json']);
    expect(commit[0]!.fd).toBe(steps[0]!.fd);
    expect(statSync(path.join(dir, 'cursor.json')).ino).toBe(inode);
    expect(readCursor(dir)).toEqual({ seq: 2, offset: 20 });
    c.commit();
    expect(io.since(0)).toHaveLength(steps.length + commit.length);
  });

  it('a batch whose first step replaced the file commits with a durable replace (its name may not be on disk yet)', () => {
    fresh();
    const c = new CursorWriter(dir);
    c.step({ seq: 1, offset: 10 });
    c.step({ seq: 2, offset: 20 });
    const steps = io.since(0);
    c.commit();
    const commit = io.since(steps.length);
    expect(commit.map((e) => e.op)).toEqual(['write', 'fsync', 'fsync']);
    expect(isTemp(commit[0]!.file)).toBe(true);
    expect(commit[2]!.file).toBe(path.basename(dir));
    expect(readCursor(dir)).toEqual({ seq: 2, offset: 20 });
  });

  it('a file replaced under the batch (a rewind) is replaced again by the commit, as the last step says', () => {
    fresh();
    writeCursor(dir, { seq: 1, offset: 1 });
    const c = new CursorWriter(dir);
    c.step({ seq: 2, offset: 20 });
    writeCursor(dir, { seq: 1, offset: 1 });
    io.reset();
    c.commit();
    expect(io.since(0).map((e) => e.op)).toEqual(['fsync', 'write', 'fsync', 'fsync']);
    expect(readCursor(dir)).toEqual({ seq: 2, offset: 20 });
  });

  it('the first cursor ever: its first step is an atomic replace (no fsync), later steps are in place', () => {
    fresh();
    const c = new CursorWriter(dir);
    c.step({ seq: 1, offset: 10 });
    c.step({ seq: 2, offset: 20 });
    const events = io.since(0);
    expect(events.map((e) => e.op)).toEqual(['write', 'write']);
    expect(isTemp(events[0]!.file)).toBe(true);
    expect(events[1]!.file).toBe('cursor.json');
    c.commit();
    expect(readCursor(dir)).toEqual({ seq: 2, offset: 20 });
  });

  it('committing without a step touches nothing', () => {
    fresh();
    new CursorWriter(dir).commit();
    expect(io.events).toEqual([]);
  });

  it('a cursor path it cannot write is an error, not a silent success', () => {
    fresh();
    mkdirSync(path.join(dir, 'cursor.json'));
    expect(() => new CursorWriter(dir).step({ seq: 1, offset: 1 })).toThrow(/EISDIR/);
  });

  it('a failed fsync at commit is thrown, the descriptor closed and the cursor on disk the last step', () => {
    fresh();
    writeCursor(dir, { seq: 1, offset: 1 });
    const c = new CursorWriter(dir);
    c.step({ seq: 2, offset: 20 });
    io.failNext('fsync', (f) => f === 'cursor.json');
    expect(() => c.commit()).toThrow(/EIO: i\/o error, fsync/);
    expect(readdirSync(dir)).toEqual(['cursor.json']);
    expect(readCursor(dir)).toEqual({ seq: 2, offset: 20 });
    c.commit();
  });

  it('a failed fsync of a commit by replace is thrown, the temp file removed and the cursor on disk the last step', () => {
    fresh();
    const c = new CursorWriter(dir);
    c.step({ seq: 2, offset: 20 });
    io.failNext('fsync', isTemp);
    expect(() => c.commit()).toThrow(/EIO: i\/o error, fsync/);
    expect(readdirSync(dir)).toEqual(['cursor.json']);
    expect(readCursor(dir)).toEqual({ seq: 2, offset: 20 });
  });
});
