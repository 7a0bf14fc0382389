import { appendFileSync, readFileSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { fakeClock } from '../../../src/util/clock.js';
import {
  Spool,
  SpoolReader,
  SpoolWriteError,
  entryStanding,
  validateCursor,
  type NewSpoolRecord,
  type SpoolEntry,
  type SpoolEntryRecord,
} from '../../../src/spool/index.js';
import { addressChange } from '../../helpers/spool.js';
import { tempDir } from './tmp.js';

const clock = fakeClock(Date.parse('2026-09-18T14:00:00.000Z'));

const entry = (id: string, text = 'hello'): NewSpoolRecord<SpoolEntry> => ({
  type: 'entry',
  session: 'sess_a',
  entry: { id, kind: 'directive', from: 'human:h1', to: 'agent:agt_1#sess_a', created_at: '2026-09-18T13:59:59.000Z', text },
  signature: `t=1789740000,jti=${'j'.repeat(16)}${id},alg=hmac-sha256,v1=${'0'.repeat(64)}`,
});

function open(dir: string): Spool {
  const r = Spool.open(dir, { clock });
  if (!r.ok) throw new Error(r.reason);
  return r.value;
}

const spoolFile = (dir: string) => path.join(dir, 'bridge.ndjson');

describe('Spool', () => {
  it('assigns contiguous seqs from 1, one line per record, received_at on our clock', () => {
    const dir = tempDir();
    const s = open(dir);
    const written = s.append([entry('e1'), entry('e2')]);
    expect(written.map((r) => r.seq)).toEqual([1, 2]);
    expect(written[0]?.received_at).toBe('2026-09-18T14:00:00.000Z');
    s.append([entry('e3')]);
    const text = readFileSync(spoolFile(dir), 'utf8');
    expect(text.split('\n')).toHaveLength(4);
    expect(text.endsWith('\n')).toBe(true);
    const first = JSON.parse(text.split('\n')[0] ?? '');
    expect(Object.keys(first)).toEqual(['seq', 'type', 'received_at', 'session', 'entry', 'signature', 'sum']);
    expect(first.sum).toMatch(/^[0-9a-f]{8}$/);
    expect(s.lastSeq()).toBe(3);
    s.close();
    const again = open(dir);
    expect(again.lastSeq()).toBe(3);
    expect(again.recovery).toBeNull();
    expect([...again.entryIds()]).toEqual(['e1', 'e2', 'e3']);
    expect(again.hasEntry('e2')).toBe(true);
    expect(again.spooledAt('e2')).toEqual({ seq: 2, session: 'sess_a' });
    expect(again.spooledAt('nope')).toBeNull();
    expect(statSync(spoolFile(dir)).mode & 0o777).toBe(0o600);
  });

  it('knows, without reading, exactly the cursor just past its last record — across a seal, as validateCursor would', () => {
    const dir = tempDir();
    const opened = Spool.open(dir, { clock: fakeClock(Date.parse('2026-09-18T14:00:00.000Z')), segment: { records: 2, bytes: 1 << 20 } });
    if (!opened.ok) throw new Error(opened.reason);
    const s = opened.value;
    for (const id of ['e1', 'e2', 'e3']) {
      s.append([entry(id)]);
      const items = s.readAfter(0);
      for (const item of items) {
        for (const offset of [item.end - 1, item.end, item.end + 1]) {
          const cursor = { seq: item.record.seq, offset };
          const last = item === items.at(-1) && offset === item.end;
          expect(s.endsLastRecord(cursor), `${id}: ${JSON.stringify(cursor)}`).toBe(last);
          if (last) expect(validateCursor(s, cursor).rewound).toBeNull();
        }
      }
    }
    expect(s.readAfter(0).map((i) => i.record.seq)).toEqual([1, 2, 3]);
    s.close();
  });

  it('writes a transition record with the documented fields in order', () => {
    const dir = tempDir();
    const s = open(dir);
    s.append([entry('e1')]);
    const [t] = s.append([
      {
        type: 'transition',
        event: 'address_changed',
        from_session: 'sess_a',
        to_session: 'sess_b',
        from_address: 'agent:agt_1#sess_a',
        to_address: 'agent:agt_1#sess_b',
        reason: 'session_lapsed',
      },
    ]);
    expect(t?.seq).toBe(2);
    const line = readFileSync(spoolFile(dir), 'utf8').split('\n')[1] ?? '';
    expect(Object.keys(JSON.parse(line))).toEqual([
      'seq',
      'type',
      'received_at',
      'event',
      'from_session',
      'to_session',
      'from_address',
      'to_address',
      'reason',
      'sum',
    ]);
    expect(s.successorOf('sess_a')).toMatchObject({ from_session: 'sess_a', to_session: 'sess_b' });
    expect(s.successorOf('sess_b')).toBeNull();
    const items = new SpoolReader(dir).readAfter(0);
    const first = items[0]?.record as SpoolEntryRecord;
    expect(entryStanding(first, 'sess_b', new SpoolReader(dir).scan().successors)).toBe('possibly_bounced');
    expect(entryStanding(first, 'sess_a', new SpoolReader(dir).scan().successors)).toBe('fresh');
  });

  it('says which session replaced which, read back at open; of two from one session (an older build spooled both), the later', () => {
    const dir = tempDir();
    const s = open(dir);
    s.append([addressChange('sess_a', 'sess_b'), entry('e1'), addressChange('sess_a', 'sess_c'), addressChange('sess_c', 'sess_d')]);
    s.close();
    const again = open(dir);
    expect(again.successorOf('sess_a')).toMatchObject({ seq: 3, to_session: 'sess_c', to_address: 'a#sess_c' });
    expect(again.successorOf('sess_c')).toMatchObject({ to_session: 'sess_d' });
    expect(again.successorOf('sess_b')).toBeNull();
    again.close();
  });

  it('round-trips U+2028, U+2029, \\r, quotes and 8 KB of text as one line', () => {
    const dir = tempDir();
    const text = 'a\u2028b\u2029c\r\nd"e\'f\\g\u0000h' + 'x'.repeat(8192);
    const s = open(dir);
    s.append([entry('big', text), entry('after')]);
    const raw = readFileSync(spoolFile(dir), 'utf8');
    expect(raw.split('\n').filter((l) => l !== '')).toHaveLength(2);
    // Kept out of the file as \u escapes (sealLine): the same JSON value, nothing a terminal acts on.
    expect(raw).not.toContain('\u2028');
    expect(raw).toContain('\\u2028');
    const items = new SpoolReader(dir).readAfter(0);
    expect(items).toHaveLength(2);
    expect(items[0]?.record.type === 'entry' && items[0].record.entry.text).toBe(text);
    expect(items[0]?.line).toBe(raw.split('\n')[0]);
  });

  it('cuts a torn tail (a short line) and the next append lands on a clean line', () => {
    const dir = tempDir();
    const s = open(dir);
    s.append([entry('e1'), entry('e2')]);
    s.close();
    const good = statSync(spoolFile(dir)).size;
    const torn = '{"seq":3,"type":"entry","rece';
    appendFileSync(spoolFile(dir), torn);
    const r = open(dir);
    expect(r.recovery).toMatchObject({ cutAt: good, cutBytes: torn.length });
    expect(r.lastSeq()).toBe(2);
    r.append([entry('e3')]);
    const items = new SpoolReader(dir).readAfter(0);
    expect(items.map((i) => i.record.seq)).toEqual([1, 2, 3]);
    expect(readFileSync(spoolFile(dir), 'utf8').split('\n')).toHaveLength(4);
  });

  it.each([
    ['bytes that are not JSON', '\u0000\u0000garbage\xff\n{"half'],
    ['a valid-looking line with a wrong seq', 'SEQ9'],
    ['a line whose sum does not match', 'BADSUM'],
    ['a complete record without its newline', 'NONL'],
  ])('cuts a garbage tail: %s', (_what, tail) => {
    const dir = tempDir();
    const s = open(dir);
    s.append([entry('e1'), entry('e2')]);
    s.close();
    const good = readFileSync(spoolFile(dir), 'utf8');
    let junk = tail;
    if (tail === 'SEQ9') {
      // a perfectly sealed record, but with a seq that does not follow
      const other = tempDir();
      const o = open(other);
      for (let i = 0; i < 9; i++) o.append([entry(`x${i}`)]);
      junk = readFileSync(spoolFile(other), 'utf8').split('\n')[8] + '\n';
    } else if (tail === 'BADSUM') {
      const other = tempDir();
      const o = open(other);
      o.append([entry('y1'), entry('y2'), entry('y3')]);
      junk = (readFileSync(spoolFile(other), 'utf8').split('\n')[2] ?? '').replace('y3', 'y4') + '\n';
    } else if (tail === 'NONL') {
      const other = tempDir();
      const o = open(other);
      o.append([entry('z1'), entry('z2'), entry('z3')]);
      junk = readFileSync(spoolFile(other), 'utf8').split('\n')[2] ?? '';
    }
    appendFileSync(spoolFile(dir), junk);
    // a reader stops at the damage without touching the file
    expect(new SpoolReader(dir).readAfter(0).map((i) => i.record.seq)).toEqual([1, 2]);
    const r = open(dir);
    expect(r.recovery?.cutAt).toBe(Buffer.byteLength(good));
    expect(readFileSync(spoolFile(dir), 'utf8')).toBe(good);
    r.append([entry('e3')]);
    const items = new SpoolReader(dir).readAfter(0);
    expect(items.map((i) => i.record.seq)).toEqual([1, 2, 3]);
  });

  it('tolerates a trailing \\r on a line', () => {
    const dir = tempDir();
    const s = open(dir);
    s.append([entry('e1')]);
    s.close();
    const text = readFileSync(spoolFile(dir), 'utf8');
    writeFileSync(spoolFile(dir), text.replace(/\n$/, '\r\n'));
    const items = new SpoolReader(dir).readAfter(0);
    expect(items).toHaveLength(1);
    expect(items[0]?.line.endsWith('}')).toBe(true);
    expect(open(dir).recovery).toBeNull();
  });

  it('reads from a byte offset, with a limit, and falls back to a scan when the offset is stale', () => {
    const dir = tempDir();
    const s = open(dir);
    s.append([entry('e1'), entry('e2'), entry('e3'), entry('e4')]);
    const reader = new SpoolReader(dir);
    const all = reader.readAfter(0);
    const second = all[1];
    if (!second) throw new Error('no second record');
    expect(reader.readFrom({ seq: 2, offset: second.end }).map((i) => i.record.seq)).toEqual([3, 4]);
    expect(reader.readFrom({ seq: 2, offset: second.end }, 1).map((i) => i.record.seq)).toEqual([3]);
    expect(reader.readFrom({ seq: 2, offset: second.end + 5 }).map((i) => i.record.seq)).toEqual([3, 4]);
    expect(reader.readAfter(3).map((i) => i.record.seq)).toEqual([4]);
    expect(reader.recordEndingAt(second.end, 2)?.record.seq).toBe(2);
    expect(reader.recordEndingAt(second.end, 3)).toBeNull();
    expect(reader.recordEndingAt(second.end - 1, 2)).toBeNull();
  });

  it('an absent spool reads as empty', () => {
    const reader = new SpoolReader(tempDir());
    expect(reader.readAfter(0)).toEqual([]);
    expect(reader.lastSeq()).toBe(0);
  });

  it('a failed write leaves the spool unusable rather than retrying', () => {
    const dir = tempDir();
    const s = open(dir);
    s.append([entry('e1')]);
    s.close();
    expect(() => s.append([entry('e2')])).toThrow(SpoolWriteError);
  });

  it('watch fires when the spool grows and stops after dispose', async () => {
    const dir = tempDir();
    const s = open(dir);
    let fired = 0;
    const dispose = new SpoolReader(dir).watch(() => (fired += 1), { pollMs: 50 });
    s.append([entry('e1')]);
    const { waitFor } = await import('../../helpers/wait.js');
    await waitFor(() => fired > 0, { what: 'a change notification' });
    dispose();
    const before = fired;
    truncateSync(spoolFile(dir), 0);
    s.close();
    await new Promise((r) => setImmediate(r));
    expect(fired).toBe(before);
  });

  it('readAfter and readFrom stop at their limit, and a limit of 0 reads nothing', () => {
    const dir = tempDir();
    const s = open(dir);
    s.append(['e1', 'e2', 'e3', 'e4'].map((id) => entry(id)));
    const r = new SpoolReader(dir);
    const seqs = (items: { record: { seq: number } }[]) => items.map((i) => i.record.seq);
    expect(seqs(r.readAfter(1, 2))).toEqual([2, 3]);
    expect(seqs(r.readAfter(0, 1))).toEqual([1]);
    expect(r.readAfter(0, 0)).toEqual([]);
    const first = r.readAfter(0, 1)[0]!;
    expect(seqs(r.readFrom({ seq: 1, offset: first.end }, 2))).toEqual([2, 3]);
    expect(seqs(r.readFrom({ seq: 1, offset: first.end }, 1))).toEqual([2]);
    expect(r.readFrom({ seq: 1, offset: first.end }, 0)).toEqual([]);
    // a stale offset (not the end of record 1) falls back to a scan, limit kept
    expect(seqs(r.readFrom({ seq: 1, offset: first.end - 3 }, 2))).toEqual([2, 3]);
    // at the end: nothing, and no fallback that would re-read
    expect(r.readFrom({ seq: 4, offset: s.end() })).toEqual([]);
    s.close();
  });

  it('an empty append writes nothing and returns nothing; the size tracks what was written', () => {
    const dir = tempDir();
    const s = open(dir);
    expect(s.append([])).toEqual([]);
    expect(s.end()).toBe(0);
    s.append([entry('e1')]);
    const size = statSync(spoolFile(dir)).size;
    expect(s.end()).toBe(size);
    s.append([entry('e2')]);
    expect(s.end()).toBe(statSync(spoolFile(dir)).size);
    expect(s.end()).toBeGreaterThan(size);
    s.close();
    s.close();
  });

  it('keeps the first place of an id spooled twice (a reader scan and the writer agree)', () => {
    const dir = tempDir();
    const s = open(dir);
    s.append([entry('e1'), { type: 'entry', session: 'sess_b', entry: { id: 'e1' }, signature: 'sig' }]);
    expect(s.spooledAt('e1')).toEqual({ seq: 1, session: 'sess_a' });
    expect(new SpoolReader(dir).scan().entries.get('e1')).toEqual({ seq: 1, session: 'sess_a' });
    expect([...new SpoolReader(dir).entryIds()]).toEqual(['e1']);
    s.close();
  });

  it('says why recovery cut a tail: a record out of sequence, or a line without its newline', () => {
    const dir = tempDir();
    const s = open(dir);
    s.append([entry('e1'), entry('e2')]);
    s.close();
    const [, second] = readFileSync(spoolFile(dir), 'utf8').split('\n');
    appendFileSync(spoolFile(dir), second + '\n');
    const again = open(dir);
    expect(again.recovery?.reason).toMatch(/^byte \d+: the line has seq 2 where 3 belongs$/);
    again.close();
    appendFileSync(spoolFile(dir), '{"torn');
    const third = open(dir);
    expect(third.recovery?.reason).toBe(`byte ${third.end()}: a line without its newline (torn write)`);
    third.close();
  });

  it('refuses to spool a record that would not read back', () => {
    const s = open(tempDir());
    expect(() => s.append([{ type: 'entry', session: 'sess_a', entry: { id: '' }, signature: 'sig' }])).toThrow(/^refusing to spool a malformed record: /);
    expect(s.lastSeq()).toBe(0);
    s.close();
  });
});
