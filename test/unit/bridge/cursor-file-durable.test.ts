import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { CursorFile } from '../../../src/reader/cursor-file.js';
import { readCursor } from '../../../src/spool/index.js';
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

describe('the reader cursor: what reaches the disk when', () => {
  it('one descriptor for every step, one fsync of it at close, and the directory fsynced when the file was created', () => {
    const file = path.join(fresh(), 'cursor.json');
    const c = new CursorFile(file);
    c.step({ seq: 1, offset: 10 });
    c.step({ seq: 2, offset: 20 });
    const writes = io.since(0).filter((e) => e.op === 'write');
    expect(writes.map((e) => e.file)).toEqual(['cursor.json', 'cursor.json']);
    expect(new Set(writes.map((e) => e.fd)).size).toBe(1);
    expect(io.since(0).filter((e) => e.op === 'fsync')).toEqual([]);
    c.close();
    const fsyncs = io.since(0).filter((e) => e.op === 'fsync');
    expect(fsyncs.map((e) => e.file)).toEqual(['cursor.json', path.basename(dir)]);
    expect(fsyncs[0]!.fd).toBe(writes[0]!.fd);
    expect(readCursor(dir)).toEqual({ seq: 2, offset: 20 });
    c.close();
    expect(io.since(0).filter((e) => e.op === 'fsync')).toHaveLength(2);
  });

  it('an existing cursor file: no directory fsync', () => {
    fresh();
    writeFileSync(path.join(dir, 'cursor.json'), '{"seq":1,"offset":2}\n');
    const c = new CursorFile(path.join(dir, 'cursor.json'));
    c.step({ seq: 3, offset: 4 });
    c.close();
    expect(
      io
        .since(0)
        .filter((e) => e.op === 'fsync')
        .map((e) => e.file),
    ).toEqual(['cursor.json']);
  });

  it('closing without a step touches nothing', () => {
    const c = new CursorFile(path.join(fresh(), 'cursor.json'));
    c.close();
    expect(io.events).toEqual([]);
  });

  it('a cursor path it cannot open is an error, not a silent new file', () => {
    fresh();
    mkdirSync(path.join(dir, 'cursor.json'));
    expect(() => new CursorFile(path.join(dir, 'cursor.json')).step({ seq: 1, offset: 1 })).toThrow(/EISDIR/);
  });

  it('a failed fsync at close still lets go of the descriptor, and is thrown', () => {
    const c = new CursorFile(path.join(fresh(), 'cursor.json'));
    c.step({ seq: 1, offset: 10 });
    io.failNext('fsync', (f) => f === 'cursor.json');
    expect(() => c.close()).toThrow(/EIO: i\/o error, fsync/);
    c.close();
    expect(io.since(0).filter((e) => e.op === 'fsync')).toHaveLength(1);
  });
});
