import { appendFileSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { Ledger } from '../../../src/spool/index.js';
import { sealLine } from '../../../src/spool/line.js';
import { tempDir } from './tmp.js';

function open(dir: string): Ledger {
  const r = Ledger.open(dir);
  if (!r.ok) throw new Error(r.reason);
  return r.value;
}

const file = (dir: string) => path.join(dir, 'ledger.ndjson');

describe('Ledger', () => {
  it('tracks spooled → delivered → acknowledged (removed), across reopen', () => {
    const dir = tempDir();
    const l = open(dir);
    l.recordSpooled([
      { id: 'e1', seq: 1, session: 'sess_a' },
      { id: 'e2', seq: 2, session: 'sess_a' },
      { id: 'e3', seq: 4, session: 'sess_b' },
    ]);
    expect(l.needsDelivered().map((e) => e.id)).toEqual(['e1', 'e2', 'e3']);
    l.markDelivered(['e1', 'e3', 'unknown']);
    expect(l.needsDelivered().map((e) => e.id)).toEqual(['e2']);
    expect(l.needsAcknowledged(2)).toEqual([
      { id: 'e1', seq: 1, session: 'sess_a', state: 'delivered' },
      { id: 'e2', seq: 2, session: 'sess_a', state: 'spooled' },
    ]);
    l.acknowledge(['e1']);
    l.close();
    const again = open(dir);
    expect(again.recovery).toBeNull();
    expect(again.pending()).toEqual([
      { id: 'e2', seq: 2, session: 'sess_a', state: 'spooled' },
      { id: 'e3', seq: 4, session: 'sess_b', state: 'delivered' },
    ]);
    expect(again.needsAcknowledged(3).map((e) => e.id)).toEqual(['e2']);
    expect(statSync(file(dir)).mode & 0o777).toBe(0o600);
  });

  it('recording an id again is a no-op (a redelivered duplicate keeps its first seq and state)', () => {
    const dir = tempDir();
    const l = open(dir);
    l.recordSpooled([{ id: 'e1', seq: 1, session: null }]);
    l.markDelivered(['e1']);
    const size = statSync(file(dir)).size;
    l.recordSpooled([{ id: 'e1', seq: 7, session: 'sess_x' }]);
    expect(statSync(file(dir)).size).toBe(size);
    expect(l.pending()).toEqual([{ id: 'e1', seq: 1, session: null, state: 'delivered' }]);
  });

  it.each([
    ['a torn line', '{"op":"acknowledged","ids":["e'],
    ['garbage bytes', '\u0000\u0000\u0000\n\u0001'],
    ['a complete line with a bad sum', '{"op":"acknowledged","ids":["e1"],"sum":"00000000"}\n'],
  ])('cuts %s at the tail and appends cleanly after it', (_what, tail) => {
    const dir = tempDir();
    const l = open(dir);
    l.recordSpooled([{ id: 'e1', seq: 1, session: 'sess_a' }]);
    l.close();
    const good = readFileSync(file(dir), 'utf8');
    appendFileSync(file(dir), tail);
    const r = open(dir);
    expect(r.recovery).toEqual({ cutAt: Buffer.byteLength(good), cutBytes: Buffer.byteLength(tail) });
    expect(r.pending().map((e) => e.id)).toEqual(['e1']);
    r.recordSpooled([{ id: 'e2', seq: 2, session: 'sess_a' }]);
    r.close();
    expect(
      open(dir)
        .pending()
        .map((e) => e.id),
    ).toEqual(['e1', 'e2']);
  });

  it('compacts to the live entries, explicitly and once dead lines pile up', () => {
    const dir = tempDir();
    const l = open(dir);
    for (let i = 1; i <= 1500; i++) {
      l.recordSpooled([{ id: `e${i}`, seq: i, session: 'sess_a' }]);
      l.markDelivered([`e${i}`]);
      if (i > 2) l.acknowledge([`e${i - 2}`]);
    }
    // auto-compaction kept the file near the live set
    expect(readFileSync(file(dir), 'utf8').split('\n').length).toBeLessThan(3000);
    expect(l.pending().map((e) => e.id)).toEqual(['e1499', 'e1500']);
    l.compact();
    expect(readFileSync(file(dir), 'utf8').trim().split('\n')).toHaveLength(2);
    l.recordSpooled([{ id: 'e1501', seq: 1501, session: 'sess_b' }]);
    l.close();
    expect(open(dir).pending()).toEqual([
      { id: 'e1499', seq: 1499, session: 'sess_a', state: 'delivered' },
      { id: 'e1500', seq: 1500, session: 'sess_a', state: 'delivered' },
      { id: 'e1501', seq: 1501, session: 'sess_b', state: 'spooled' },
    ]);
  });

  it('a closed ledger refuses writes instead of losing them', () => {
    const l = open(tempDir());
    l.close();
    expect(() => l.recordSpooled([{ id: 'e1', seq: 1, session: null }])).toThrow(/closed/);
  });

  it('lists pending entries by seq, whatever order they were recorded in', () => {
    const l = open(tempDir());
    l.recordSpooled([{ id: 'e9', seq: 9, session: 'sess_a' }]);
    l.recordSpooled([
      { id: 'e2', seq: 2, session: 'sess_a' },
      { id: 'e5', seq: 5, session: 'sess_a' },
    ]);
    expect(l.pending().map((e) => e.seq)).toEqual([2, 5, 9]);
    expect(l.needsAcknowledged(5).map((e) => e.id)).toEqual(['e2', 'e5']);
  });

  it('replay keeps the first record of an id and ignores ops for ids it never recorded', () => {
    const dir = tempDir();
    writeFileSync(
      file(dir),
      [
        { op: 'entry', id: 'e1', seq: 1, session: 'sess_a', state: 'spooled' },
        { op: 'delivered', ids: ['e1', 'ghost'] },
        { op: 'entry', id: 'e1', seq: 7, session: 'sess_b', state: 'spooled' },
        { op: 'acknowledged', ids: ['ghost'] },
      ]
        .map((op) => sealLine(op) + '\n')
        .join(''),
    );
    const l = open(dir);
    expect(l.recovery).toBeNull();
    expect(l.pending()).toEqual([{ id: 'e1', seq: 1, session: 'sess_a', state: 'delivered' }]);
    expect(l.has('ghost')).toBe(false);
  });

  // Compaction: once 1024 lines are dead and they outnumber the live entries 4 to 1.
  const lineCount = (dir: string) => readFileSync(file(dir), 'utf8').split('\n').length - 1;
  const ids = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => ({ id: `${prefix}${i}`, seq: i + 1, session: 'sess_a' }));
  it.each([
    [1, 1022, false],
    [1, 1023, true],
    [300, 1199, false],
    [300, 1200, true],
  ])('with %i live entries and %i acknowledged, compacts: %s', (live, acked, compacts) => {
    const dir = tempDir();
    const l = open(dir);
    const keep = ids('keep', live).map((e) => ({ ...e, seq: e.seq + 100_000 }));
    const gone = ids('gone', acked);
    l.recordSpooled([...keep, ...gone]);
    l.acknowledge(gone.map((e) => e.id));
    // live + acked entry lines and one acknowledged line; compaction leaves the live ones
    expect(lineCount(dir)).toBe(compacts ? live : live + acked + 1);
    expect(l.pending()).toHaveLength(live);
    l.close();
    expect(open(dir).pending()).toHaveLength(live);
  });
});
