import { appendFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { fakeClock } from '../../../src/util/clock.js';
import { linesBefore } from '../../../src/spool/line.js';
import { Spool, spooledSession, succession, trailingSuccessors, type NewSpoolRecord, type SpoolEntry } from '../../../src/spool/index.js';
import { addressChange } from '../../helpers/spool.js';
import { tempDir } from './tmp.js';

const clock = fakeClock(Date.parse('2026-09-18T14:00:00.000Z'));

const entry = (id: string, session: string): NewSpoolRecord<SpoolEntry> => ({
  type: 'entry',
  session,
  entry: { id, kind: 'directive', from: 'human:h1', to: `agent:agt_1#${session}`, created_at: '2026-09-18T13:59:59.000Z', text: 'hello' },
  signature: `t=1789740000,jti=${'j'.repeat(16)}${id},alg=hmac-sha256,v1=${'0'.repeat(64)}`,
});

function spoolWith(records: NewSpoolRecord<SpoolEntry>[][], segment = { records: 1000, bytes: 8 * 1024 * 1024 }): string {
  const dir = tempDir();
  const r = Spool.open(dir, { clock, segment });
  if (!r.ok) throw new Error(r.reason);
  for (const batch of records) r.value.append(batch);
  r.value.close();
  return dir;
}

describe('succession: which session the spool leads to', () => {
  it('follows the successors from a session to the last, and stops at a cycle', () => {
    const lookup = trailingSuccessors(spoolWith([[addressChange('sess_a', 'sess_b'), addressChange('sess_b', 'sess_c')]]));
    expect(succession('sess_a', lookup).map((t) => t.to_session)).toEqual(['sess_b', 'sess_c']);
    expect(succession('sess_c', lookup)).toEqual([]);
    const cycle = trailingSuccessors(spoolWith([[addressChange('sess_a', 'sess_b'), addressChange('sess_b', 'sess_a')]]));
    expect(succession('sess_a', cycle).map((t) => t.to_session)).toEqual(['sess_b', 'sess_a']);
  });

  it('reads only the address changes after the last other record: an older one was recorded in session.json long since', () => {
    const dir = spoolWith([[addressChange('sess_a', 'sess_b'), entry('e1', 'sess_b'), addressChange('sess_b', 'sess_c')]]);
    expect(spooledSession(dir, 'sess_b')).toMatchObject({ id: 'sess_c', address: 'a#sess_c' });
    expect(spooledSession(dir, 'sess_a')).toBeNull();
  });

  it('of two from one session (an older build spooled both), the later; a torn final line is not a record', () => {
    const dir = spoolWith([[entry('e1', 'sess_a'), addressChange('sess_a', 'sess_b'), addressChange('sess_a', 'sess_c')]]);
    appendFileSync(path.join(dir, 'bridge.ndjson'), '{"seq":4,"type":"transition","from_session":"sess_c"');
    expect(spooledSession(dir, 'sess_a')).toMatchObject({ id: 'sess_c', address: 'a#sess_c' });
  });

  it('goes on into the sealed segment while the current one holds only address changes', () => {
    const dir = spoolWith([[entry('e1', 'sess_a')], [addressChange('sess_a', 'sess_b')], [addressChange('sess_b', 'sess_c')]], { records: 2, bytes: 1 << 20 });
    expect(readdirSync(dir).filter((f) => /^bridge\.\d+\.ndjson$/.test(f))).toHaveLength(1);
    expect(spooledSession(dir, 'sess_a')).toMatchObject({ id: 'sess_c', address: 'a#sess_c' });
  });

  it('a spool that does not exist names no successor', () => {
    expect(spooledSession(path.join(tempDir(), 'none'), 'sess_a')).toBeNull();
  });
});

describe('linesBefore', () => {
  it('yields the complete lines last first, across chunks, without the final piece', () => {
    const dir = tempDir();
    const file = path.join(dir, 'f');
    const long = 'x'.repeat(100 * 1024);
    appendFileSync(file, `one\n${long}\n\nthree\ntorn`);
    const lines = [...linesBefore(file)];
    expect(lines.map((l) => l.text)).toEqual(['three', '', long, 'one']);
    expect(lines.map((l) => [l.start, l.end])).toEqual([
      [long.length + 6, long.length + 12],
      [long.length + 5, long.length + 6],
      [4, long.length + 5],
      [0, 4],
    ]);
    expect([...linesBefore(file, 4)].map((l) => l.text)).toEqual(['one']);
  });
});
