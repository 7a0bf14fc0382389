import { readFileSync, truncateSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { fakeClock } from '../../../src/util/clock.js';
import {
  Spool,
  SpoolReader,
  openStateDir,
  readCursor,
  readCursorRecord,
  validateCursor,
  writeCursor,
  type NewSpoolRecord,
  type SpoolEntry,
} from '../../../src/spool/index.js';
import { tempDir } from './tmp.js';

const clock = fakeClock(0);
const entry = (id: string): NewSpoolRecord<SpoolEntry> => ({ type: 'entry', session: 'sess_a', entry: { id, text: `text of ${id}` }, signature: 'sig' });

function spoolWith(dir: string, ids: string[]): Spool {
  const r = Spool.open(dir, { clock });
  if (!r.ok) throw new Error(r.reason);
  if (ids.length > 0) r.value.append(ids.map(entry));
  return r.value;
}

describe('cursor', () => {
  it('reads {0,0} when absent and round-trips atomically', () => {
    const dir = tempDir();
    expect(readCursor(dir)).toEqual({ seq: 0, offset: 0 });
    expect(readCursorRecord(dir).state).toBe('absent');
    writeCursor(dir, { seq: 3, offset: 120 });
    expect(readCursor(dir)).toEqual({ seq: 3, offset: 120 });
    expect(JSON.parse(readFileSync(path.join(dir, 'cursor.json'), 'utf8'))).toEqual({ seq: 3, offset: 120 });
  });

  it('an unreadable cursor is reported as unreadable and read as none (re-read, never skip)', () => {
    const dir = tempDir();
    writeFileSync(path.join(dir, 'cursor.json'), '{"seq":');
    expect(readCursorRecord(dir).state).toBe('unreadable');
    expect(readCursor(dir)).toEqual({ seq: 0, offset: 0 });
  });

  it('keeps a cursor whose offset ends the record with its seq', () => {
    const dir = tempDir();
    spoolWith(dir, ['a', 'b', 'c']);
    const second = new SpoolReader(dir).readAfter(0)[1];
    if (!second) throw new Error('no record');
    const c = { seq: 2, offset: second.end };
    expect(validateCursor(new SpoolReader(dir), c)).toEqual({ cursor: c, rewound: null });
  });

  it('a cursor past a truncated spool rewinds, and the consumer fixes it before appending, so nothing new is skipped', () => {
    const dir = tempDir();
    const s = spoolWith(dir, ['a', 'b', 'c', 'd']);
    s.close();
    const items = new SpoolReader(dir).readAfter(0);
    const fourth = items[3];
    const second = items[1];
    if (!fourth || !second) throw new Error('no record');
    // the reader printed all four; then a power loss took records 3 and 4 (never acked, so the Hub redelivers)
    writeCursor(dir, { seq: 4, offset: fourth.end });
    truncateSync(path.join(dir, 'bridge.ndjson'), second.end);
    expect(validateCursor(new SpoolReader(dir), readCursor(dir)).cursor).toEqual({ seq: 2, offset: second.end });
    const opened = openStateDir(dir, { create: false });
    if (!opened.ok) throw new Error(opened.reason);
    const again = opened.value.openSpool(clock);
    if (!again.ok) throw new Error(again.reason);
    expect(readCursor(dir)).toEqual({ seq: 2, offset: second.end });
    // redelivered entries land at new offsets; records 3 and 4 now exist again with other contents
    again.value.append(['c2', 'd2', 'e2'].map(entry));
    const check = opened.value.checkedCursor();
    expect(check).toEqual({ cursor: { seq: 2, offset: second.end }, rewound: null });
    const next = new SpoolReader(dir).readFrom(check.cursor);
    expect(next.map((i) => i.record.type === 'entry' && i.record.entry.id)).toEqual(['c2', 'd2', 'e2']);
  });

  it('a cursor on a record boundary with the wrong seq is rewound, never trusted: the seq wins only up to what exists', () => {
    const dir = tempDir();
    spoolWith(dir, ['a', 'b', 'c']);
    const ends = new SpoolReader(dir).readAfter(0).map((i) => i.end);
    const file = path.join(dir, 'bridge.ndjson');
    expect(validateCursor(new SpoolReader(dir), { seq: 1, offset: ends[1]! })).toEqual({
      cursor: { seq: 1, offset: ends[0] },
      rewound: `no record 1 ends at byte ${ends[1]} of ${file}; rewound to seq 1`,
    });
    expect(validateCursor(new SpoolReader(dir), { seq: 2, offset: ends[0]! })).toEqual({
      cursor: { seq: 2, offset: ends[1] },
      rewound: `no record 2 ends at byte ${ends[0]} of ${file}; rewound to seq 2`,
    });
    expect(validateCursor(new SpoolReader(dir), { seq: 5, offset: ends[2]! }).cursor).toEqual({ seq: 3, offset: ends[2] });
  });

  it('a cursor off any line boundary is rewound the same way', () => {
    const dir = tempDir();
    spoolWith(dir, ['a', 'b']);
    const ends = new SpoolReader(dir).readAfter(0).map((i) => i.end);
    expect(validateCursor(new SpoolReader(dir), { seq: 2, offset: ends[1]! - 1 }).cursor).toEqual({ seq: 2, offset: ends[1] });
    expect(validateCursor(new SpoolReader(dir), { seq: 1, offset: 1 }).rewound).toContain('rewound to seq 1');
  });

  it('validation alone, with records re-grown past the cursor, goes back to the last record ≤ seq', () => {
    const dir = tempDir();
    spoolWith(dir, ['a', 'b', 'c']);
    const third = new SpoolReader(dir).readAfter(0)[2];
    const check = validateCursor(new SpoolReader(dir), { seq: 3, offset: (third?.end ?? 0) + 7 });
    expect(check.rewound).toContain('rewound to seq 3');
    expect(check.cursor).toEqual({ seq: 3, offset: third?.end });
  });

  it('a cursor beyond the end of a shorter spool goes back to its last record, not forward', () => {
    const dir = tempDir();
    spoolWith(dir, ['a', 'b']);
    const check = validateCursor(new SpoolReader(dir), { seq: 9, offset: 99_999 });
    const last = new SpoolReader(dir).readAfter(0)[1];
    expect(check.cursor).toEqual({ seq: 2, offset: last?.end });
  });

  it('a cursor on an empty spool goes back to none', () => {
    const dir = tempDir();
    expect(validateCursor(new SpoolReader(dir), { seq: 3, offset: 10 }).cursor).toEqual({ seq: 0, offset: 0 });
    expect(validateCursor(new SpoolReader(dir), { seq: 0, offset: 10 }).cursor).toEqual({ seq: 0, offset: 0 });
  });

  it('a cursor of seq 0 must have offset 0; anything else is rewound to none, saying so', () => {
    const dir = tempDir();
    spoolWith(dir, ['a']);
    expect(validateCursor(new SpoolReader(dir), { seq: 0, offset: 0 })).toEqual({ cursor: { seq: 0, offset: 0 }, rewound: null });
    expect(validateCursor(new SpoolReader(dir), { seq: 0, offset: 12 })).toEqual({ cursor: { seq: 0, offset: 0 }, rewound: 'cursor had seq 0 with offset 12' });
  });

  it('a cursor file that is not a cursor reads as none', () => {
    const dir = tempDir();
    writeFileSync(path.join(dir, 'cursor.json'), '{"seq":"3","offset":10}');
    expect(readCursorRecord(dir)).toMatchObject({ state: 'unreadable', reason: expect.stringMatching(/cursor/) as string });
  });
});
