import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { displacedBy, noteDisplaced } from '../../../src/reader/attendance.js';
import { openStateDir, type StateDir } from '../../../src/spool/index.js';

const dirs: string[] = [];
function entry(): StateDir {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'oh-hai-displaced-'));
  dirs.push(dir);
  const opened = openStateDir(path.join(dir, 'e'), { create: true });
  if (!opened.ok) throw new Error(opened.reason);
  return opened.value;
}
afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));

const old = { pid: 100, host: 'box', start_time: '111' };
const newer = { pid: 200, host: 'box', start_time: '222' };

describe('the displacement notice', () => {
  it('names the displaced reader, so its SIGTERM reads as a displacement even if its last beat rewrote reader.json', () => {
    const e = entry();
    expect(displacedBy(e, old)).toBeNull();
    noteDisplaced(e, old, newer);
    expect(displacedBy(e, old)).toEqual({ pid: 200, host: 'box' });
  });
  it('never names a recycled pid (another start time), another host, or the newer reader itself', () => {
    const e = entry();
    noteDisplaced(e, old, newer);
    expect(displacedBy(e, { ...old, start_time: '999' })).toBeNull();
    expect(displacedBy(e, { ...old, host: 'other' })).toBeNull();
    expect(displacedBy(e, newer)).toBeNull();
  });
  it('a garbage notice names nobody', () => {
    const e = entry();
    writeFileSync(e.path('reader-displaced.json'), '{not json');
    expect(displacedBy(e, old)).toBeNull();
  });
});
