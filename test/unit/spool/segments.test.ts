import { appendFileSync, existsSync, readdirSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { fakeClock } from '../../../src/util/clock.js';
import {
  ioCounts,
  Ledger,
  resetIoCounts,
  Spool,
  SpoolReader,
  validateCursor,
  type NewSpoolRecord,
  type SegmentBounds,
  type SpoolEntry,
} from '../../../src/spool/index.js';
import { sealedSegmentName } from '../../../src/spool/segments.js';
import { tempDir } from './tmp.js';

const DAY = 86_400_000;
const clock = fakeClock(Date.parse('2026-09-18T14:00:00.000Z'));
const SMALL: SegmentBounds = { records: 3, bytes: 1 << 20 };

const entry = (id: string): NewSpoolRecord<SpoolEntry> => ({
  type: 'entry',
  session: 'sess_a',
  entry: { id, kind: 'directive', from: 'human:h1', to: 'agent:agt_1#sess_a', created_at: '2026-09-18T13:59:59.000Z', text: `text of ${id}` },
  signature: `t=1789740000,jti=${'j'.repeat(16)}${id},alg=hmac-sha256,v1=${'0'.repeat(64)}`,
});

function open(dir: string, opts: { from?: number; segment?: SegmentBounds } = {}): Spool {
  const r = Spool.open(dir, { clock, segment: SMALL, ...opts });
  if (!r.ok) throw new Error(r.reason);
  return r.value;
}

/** Append `n` single-record batches e<first>… . */
function fill(s: Spool, from: number, n: number): void {
  for (let i = from; i < from + n; i++) s.append([entry(`e${i}`)]);
}

const files = (dir: string) =>
  readdirSync(dir)
    .filter((n) => n.endsWith('.ndjson'))
    .sort();
const seqs = (items: { record: { seq: number } }[]) => items.map((i) => i.record.seq);
const ANY_SIZE = Number.MAX_SAFE_INTEGER;
const retainNothing = { records: 0, maxAgeMs: 365 * DAY, bytes: ANY_SIZE };

describe('spool segments', () => {
  it('seals the current segment at its bound; readers read across segments by seq and by cursor', () => {
    const dir = tempDir();
    const s = open(dir);
    fill(s, 1, 8);
    expect(files(dir)).toEqual(['bridge.000000000001.ndjson', 'bridge.000000000004.ndjson', 'bridge.ndjson']);
    const reader = new SpoolReader(dir);
    const all = reader.readAfter(0);
    expect(seqs(all)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(reader.lastSeq()).toBe(8);
    expect(reader.headSeq()).toBe(1);
    expect(seqs(reader.readAfter(5))).toEqual([6, 7, 8]);
    // a cursor's offset is in the segment holding its seq, also at a segment's last record
    const third = all[2]!;
    expect(reader.recordEndingAt(third.end, 3)?.record.seq).toBe(3);
    expect(seqs(reader.readFrom({ seq: 3, offset: third.end }))).toEqual([4, 5, 6, 7, 8]);
    expect(seqs(reader.readFrom({ seq: 3, offset: third.end }, 2))).toEqual([4, 5]);
    expect(validateCursor(reader, { seq: 3, offset: third.end }).rewound).toBeNull();
    // a stale offset falls back to reading from the segment holding seq + 1: re-read, never skip
    expect(seqs(reader.readFrom({ seq: 5, offset: 1 }))).toEqual([6, 7, 8]);
    // a cursor in the current segment reads on from its offset there (the fast path of a woken reader)
    expect(seqs(reader.readFrom({ seq: 7, offset: all[6]!.end }))).toEqual([8]);
    // a cursor in a sealed segment whose offset, read in the current segment, lands on another
    // record (8, the current segment's second line: 7 ends where 1 does) is not taken
    // for seq + 1: the segments are read, from the one holding 2
    expect(all[6]!.end).toBe(all[0]!.end);
    expect(seqs(reader.readFrom({ seq: 1, offset: all[0]!.end }))).toEqual([2, 3, 4, 5, 6, 7, 8]);
    // the same past the current segment's end: new records are found in the segments, never missed
    expect(seqs(reader.readFrom({ seq: 3, offset: all[2]!.end }, 1))).toEqual([4]);
    expect(reader.scan()).toMatchObject({ lastSeq: 8, stop: null });
  });

  it('a reader holding the current segment (a waiting reader) reads on across a seal, never skipping or repeating a record', () => {
    const dir = tempDir();
    const s = open(dir);
    fill(s, 1, 2);
    const reader = new SpoolReader(dir);
    reader.hold();
    const [, second] = reader.readAfter(0);
    let cursor = { seq: 2, offset: second!.end };
    fill(s, 3, 1);
    resetIoCounts();
    const read = (): number[] => {
      const items = reader.readFrom(cursor);
      if (items.length > 0) cursor = { seq: items.at(-1)!.record.seq, offset: items.at(-1)!.end };
      return seqs(items);
    };
    expect(read()).toEqual([3]);
    // read through the file held open since hold(): no open, no listing
    expect(ioCounts()).toEqual({ opens: {}, listings: 0, versionChecks: 0, heldReads: 1 });
    fill(s, 4, 1); // seals 1-3: the held file is the sealed segment now
    expect(files(dir)).toEqual(['bridge.000000000001.ndjson', 'bridge.ndjson']);
    expect(read()).toEqual([4]);
    // the sealed file held nothing more: the current one is held from here on
    fill(s, 5, 1);
    resetIoCounts();
    expect(read()).toEqual([5]);
    expect(ioCounts()).toEqual({ opens: {}, listings: 0, versionChecks: 0, heldReads: 1 });
    // records appended before a seal the reader did not see are read from the held (now sealed)
    // file, and what followed the seal by the next read
    fill(s, 6, 2); // seals 4-6, 7 in the current segment
    expect(read()).toEqual([6]);
    expect(read()).toEqual([7]);
    expect(read()).toEqual([]);
    reader.release();
    fill(s, 8, 1);
    resetIoCounts();
    expect(read()).toEqual([8]);
    expect(ioCounts().heldReads).toBe(0);
  });

  it('a spool of the single-file layout is the current segment as it stands, sealed by a rename when it is full', () => {
    const dir = tempDir();
    const old = open(dir, { segment: { records: 1000, bytes: 1 << 20 } });
    fill(old, 1, 5);
    old.close();
    const text = readFileSync(path.join(dir, 'bridge.ndjson'), 'utf8');
    const s = open(dir);
    expect(s.lastSeq()).toBe(5);
    s.append([entry('e6')]);
    expect(files(dir)).toEqual(['bridge.000000000001.ndjson', 'bridge.ndjson']);
    expect(readFileSync(path.join(dir, 'bridge.000000000001.ndjson'), 'utf8')).toBe(text);
    expect(seqs(new SpoolReader(dir).readAfter(0))).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it('a kill between the seal and the next append leaves no current segment: the next open goes on from the sealed one', () => {
    const dir = tempDir();
    const s = open(dir);
    fill(s, 1, 3);
    s.close();
    // what a seal leaves when the process dies right after its rename
    const sealed = path.join(dir, 'bridge.000000000001.ndjson');
    writeFileSync(sealed, readFileSync(path.join(dir, 'bridge.ndjson')));
    unlinkSync(path.join(dir, 'bridge.ndjson'));
    expect(new SpoolReader(dir).lastSeq()).toBe(3);
    const again = open(dir);
    expect(again.lastSeq()).toBe(3);
    again.append([entry('e4')]);
    expect(seqs(new SpoolReader(dir).readAfter(0))).toEqual([1, 2, 3, 4]);
  });

  it('compaction removes whole sealed segments at or before `through`, oldest first, and never the newest while the current one is empty', () => {
    const dir = tempDir();
    const s = open(dir);
    fill(s, 1, 9); // sealed 1-3, 4-6; current 7-9
    expect(s.compact({ through: 5, retain: retainNothing, nowMs: clock.now(), holdMs: 0 }).dropped).toEqual([{ first: 1, last: 3, bytes: expect.any(Number) }]);
    expect(files(dir)).toEqual(['bridge.000000000004.ndjson', 'bridge.ndjson']);
    const reader = new SpoolReader(dir);
    expect(reader.headSeq()).toBe(4);
    // a cursor in a removed segment is printed history, not damage: no rewind, and reading goes on from what is left
    expect(validateCursor(reader, { seq: 3, offset: 999 }).rewound).toBeNull();
    expect(seqs(reader.readFrom({ seq: 3, offset: 999 }))).toEqual([4, 5, 6, 7, 8, 9]);
    expect(seqs(reader.readFrom({ seq: 0, offset: 0 }))).toEqual([4, 5, 6, 7, 8, 9]);
    expect(s.compact({ through: 9, retain: retainNothing, nowMs: clock.now(), holdMs: 0 }).dropped.map((d) => d.first)).toEqual([4]);
    // the current segment is never removed
    expect(files(dir)).toEqual(['bridge.ndjson']);
    s.append([entry('e10')]); // seals 7-9
    expect(s.compact({ through: 9, retain: retainNothing, nowMs: clock.now(), holdMs: 0 }).dropped.map((d) => d.first)).toEqual([7]);
    expect(seqs(new SpoolReader(dir).readAfter(0))).toEqual([10]);
    expect(new SpoolReader(dir).lastSeq()).toBe(10);
  });

  it('keeps the newest sealed segment while the current one holds nothing: it says where the spool ends', () => {
    const dir = tempDir();
    const s = open(dir);
    fill(s, 1, 3);
    s.close();
    // sealed by hand as a kill between the seal and the append would leave it
    renameSync(path.join(dir, 'bridge.ndjson'), path.join(dir, 'bridge.000000000001.ndjson'));
    const again = open(dir);
    expect(again.compactable(3)).toBe(false);
    expect(again.compact({ through: 3, retain: retainNothing, nowMs: clock.now(), holdMs: 0 }).dropped).toEqual([]);
    expect(again.lastSeq()).toBe(3);
  });

  it('retention: enough newer settled records, or the newest record old enough', () => {
    const dir = tempDir();
    const t = fakeClock(Date.parse('2026-09-01T00:00:00.000Z'));
    const r = Spool.open(dir, { clock: t, segment: SMALL });
    if (!r.ok) throw new Error(r.reason);
    const s = r.value;
    fill(s, 1, 3);
    t.advance(10 * DAY);
    fill(s, 4, 6); // sealed 1-3 (old), 4-6; current 7-9
    const now = t.now();
    const keep5 = { records: 5, maxAgeMs: 30 * DAY, bytes: ANY_SIZE };
    // 1-3 has 6 settled records newer than it (4-9): more than 5
    expect(s.compact({ through: 9, retain: keep5, nowMs: now, holdMs: 0 }).dropped.map((d) => d.first)).toEqual([1]);
    // 4-6 has only 3 newer: kept while younger than the age bound…
    expect(s.compact({ through: 9, retain: keep5, nowMs: now, holdMs: 0 }).dropped).toEqual([]);
    // …and removed once its newest record is older than it
    expect(
      s.compact({ through: 9, retain: { records: 5, maxAgeMs: 1000, bytes: ANY_SIZE }, nowMs: now + 2000, holdMs: 0 }).dropped.map((d) => d.first),
    ).toEqual([4]);
    // never past `through`, whatever the bounds
    fill(s, 10, 3); // seals 7-9
    expect(s.compact({ through: 8, retain: retainNothing, nowMs: now, holdMs: 0 }).dropped).toEqual([]);
  });

  it('retention by bytes: a segment goes once the settled segments newer than it hold more than the bound', () => {
    const dir = tempDir();
    const s = open(dir);
    fill(s, 1, 10); // sealed 1-3, 4-6, 7-9; current 10
    const size = (first: number) => readFileSync(path.join(dir, sealedSegmentName(first))).length;
    const twoNewer = size(4) + size(7);
    const keepAll = { records: 1000, maxAgeMs: 365 * DAY };
    // 1-3 has 4-6 and 7-9 newer: exactly the bound keeps it, a byte less removes it…
    expect(s.compact({ through: 10, retain: { ...keepAll, bytes: twoNewer }, nowMs: clock.now(), holdMs: 0 }).dropped).toEqual([]);
    expect(s.compact({ through: 10, retain: { ...keepAll, bytes: twoNewer - 1 }, nowMs: clock.now(), holdMs: 0 }).dropped.map((d) => d.first)).toEqual([1]);
    // …and only what is settled counts: with 7-9 not yet through, 4-6 has nothing newer to count
    expect(s.compact({ through: 8, retain: { ...keepAll, bytes: 0 }, nowMs: clock.now(), holdMs: 0 }).dropped).toEqual([]);
    // 0 bytes: every settled sealed segment but the newest goes (it says where the spool ends)
    expect(s.compact({ through: 10, retain: { ...keepAll, bytes: 0 }, nowMs: clock.now(), holdMs: 0 }).dropped.map((d) => d.first)).toEqual([4]);
  });

  it('dedup keeps the ids of removed records for the hold, then forgets them', () => {
    const dir = tempDir();
    const s = open(dir);
    fill(s, 1, 7);
    s.compact({ through: 6, retain: retainNothing, nowMs: 1000, holdMs: 5000 });
    expect(s.hasEntry('e1')).toBe(true);
    s.compact({ through: 6, retain: retainNothing, nowMs: 6000, holdMs: 5000 });
    expect([s.hasEntry('e1'), s.hasEntry('e6'), s.hasEntry('e7')]).toEqual([false, false, true]);
  });

  it('open reads from the segment holding `from` + 1: dedup needs no settled id from before it', () => {
    const dir = tempDir();
    const s = open(dir);
    fill(s, 1, 8);
    s.close();
    const again = open(dir, { from: 5 });
    expect([...again.entryIds()]).toEqual(['e4', 'e5', 'e6', 'e7', 'e8']);
    expect(again.entriesAfter(6).map((e) => e.id)).toEqual(['e7', 'e8']);
    expect(again.lastSeq()).toBe(8);
    again.append([entry('e9')]);
    expect(seqs(new SpoolReader(dir).readAfter(7))).toEqual([8, 9]);
  });

  it('a torn tail of the current segment is cut after seals; a damaged sealed segment refuses the open, naming it', () => {
    const dir = tempDir();
    const s = open(dir);
    fill(s, 1, 5);
    s.close();
    appendFileSync(path.join(dir, 'bridge.ndjson'), '{"seq":6,"ty');
    const again = open(dir);
    expect(again.recovery).toMatchObject({ cutBytes: 12 });
    expect(again.lastSeq()).toBe(5);
    again.close();
    const sealed = path.join(dir, 'bridge.000000000001.ndjson');
    writeFileSync(sealed, readFileSync(sealed, 'utf8').replace('text of e2', 'text of eX'));
    const r = Spool.open(dir, { clock, segment: SMALL });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.reason).toMatch(/sealed spool segment .*bridge\.000000000001\.ndjson is damaged/);
    expect(existsSync(path.join(dir, 'bridge.ndjson'))).toBe(true);
  });
});

describe('the ledger settled mark', () => {
  function ledger(dir: string): Ledger {
    const r = Ledger.open(dir);
    if (!r.ok) throw new Error(r.reason);
    return r.value;
  }

  it('is the seq through which every covered entry is acknowledged, persisted with each acknowledgement and across compaction', () => {
    const dir = tempDir();
    const l = ledger(dir);
    l.recordSpooled([
      { id: 'e1', seq: 1, session: 'sess_a' },
      { id: 'e2', seq: 2, session: 'sess_a' },
      { id: 'e4', seq: 4, session: 'sess_a' },
    ]);
    // nothing vouched for yet
    expect(l.settledThrough()).toBe(0);
    l.cover(5);
    expect(l.settledThrough()).toBe(0);
    l.acknowledge(['e1', 'e4']);
    expect(l.settledThrough()).toBe(1);
    l.acknowledge(['e2']);
    expect(l.settledThrough()).toBe(5);
    l.close();
    const again = ledger(dir);
    expect(again.settledThrough()).toBe(5);
    again.compact();
    again.close();
    expect(readFileSync(path.join(dir, 'ledger.ndjson'), 'utf8')).toMatch(/^\{"op":"settled","through":5,"sum":"[0-9a-f]{8}"\}\n$/);
    expect(ledger(dir).settledThrough()).toBe(5);
  });
});

describe('a mismatched cursor after the head segments were removed', () => {
  it('rewinds to the last record at or before its seq, never to one past it (re-read, never skip)', () => {
    const dir = tempDir();
    const s = open(dir);
    fill(s, 1, 9); // sealed 1-3, 4-6; current 7-9
    s.compact({ through: 5, retain: retainNothing, nowMs: clock.now(), holdMs: 0 });
    const reader = new SpoolReader(dir);
    expect(reader.headSeq()).toBe(4);
    // seq 5 is in the spool but its offset ends no record: the walk from the oldest segment
    // (seq 4) reads five records, 4-8, and must stop at 5
    const fifth = reader.readAfter(4, 1)[0];
    if (!fifth) throw new Error('no record 5');
    const checked = validateCursor(reader, { seq: 5, offset: fifth.end + 1 });
    expect(checked.cursor).toEqual({ seq: 5, offset: fifth.end });
    expect(checked.rewound).toMatch(/no record 5 ends at byte .*; rewound to seq 5$/);
    expect(seqs(reader.readFrom(checked.cursor))).toEqual([6, 7, 8, 9]);
  });
});
