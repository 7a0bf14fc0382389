import { appendFileSync, mkdtempSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { Ledger, readCursorRecord, Spool, SpoolReader, validateCursor } from '../../../src/spool/index.js';
import { systemClock } from '../../../src/util/clock.js';
import { fuzzParameters } from '../../helpers/fuzz.js';
import { delivery } from '../consumer/deliveries.js';

/**
 * Recovery of the spool, the ledger and the cursor from a tail cut at any byte and/or
 * garbage appended (what a crash or a torn write leaves): opening never throws, keeps
 * exactly the complete records before the damage, and the next append lands on a clean
 * line with the next seq. A cursor that no longer matches is rewound, never moved forward.
 */

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
const tempDir = () => {
  const d = mkdtempSync(path.join(os.tmpdir(), 'oh-hai-fuzz-recovery-'));
  dirs.push(d);
  return d;
};

/** Garbage a crash can leave: random bytes, a line that looks like a record, a record with a wrong sum, NULs. */
const garbage = fc.oneof(
  fc.uint8Array({ minLength: 1, maxLength: 80 }),
  fc
    .constantFrom('{"seq":99,"type":"entry"', '{"seq":3,"type":"entry","session":"s","sum":"00000000"}\n', '\u0000'.repeat(64), '\n\n', '}\n', '\r\n')
    .map((s) => new TextEncoder().encode(s)),
);

const openSpool = (dir: string): Spool => {
  const s = Spool.open(dir, { clock: systemClock });
  if (!s.ok) throw new Error(s.reason);
  return s.value;
};

describe('recovery from a damaged tail (fuzzed)', () => {
  it('spool: any cut, any garbage — a prefix of what was written survives, and the next append follows it', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 6 }), fc.double({ min: 0, max: 1, noNaN: true }), fc.option(garbage, { nil: null }), (n, cutAt, junk) => {
        const dir = tempDir();
        const s = openSpool(dir);
        const written = s.append(Array.from({ length: n }, (_, i) => ({ type: 'entry' as const, session: 'sess_a', ...pick(delivery(`ent_${i}`)) })));
        s.close();
        const file = path.join(dir, 'bridge.ndjson');
        const size = readFileSync(file).length;
        truncateSync(file, Math.floor(size * cutAt));
        if (junk) appendFileSync(file, junk);
        const again = openSpool(dir);
        const kept = again.readAfter(0);
        expect(kept.map((k) => k.record.seq)).toEqual(written.slice(0, kept.length).map((w) => w.seq));
        const next = again.append([{ type: 'entry', session: 'sess_a', ...pick(delivery('ent_after')) }]);
        expect(next[0]!.seq).toBe(kept.length + 1);
        again.close();
        const reread = new SpoolReader(dir).readAfter(0);
        expect(reread.map((k) => k.record.seq)).toEqual([...kept.map((k) => k.record.seq), kept.length + 1]);
        expect(readFileSync(file, 'utf8').endsWith('\n')).toBe(true);
      }),
      fuzzParameters(0x5901, 100),
    );
  });

  it('ledger: any cut, any garbage — opening never throws and keeps a subset of what was recorded; it still records', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 6 }), fc.double({ min: 0, max: 1, noNaN: true }), fc.option(garbage, { nil: null }), (n, cutAt, junk) => {
        const dir = tempDir();
        const l = open(Ledger.open(dir));
        const recorded = Array.from({ length: n }, (_, i) => ({ id: `ent_${i}`, seq: i + 1, session: 'sess_a' }));
        l.recordSpooled(recorded);
        l.markDelivered(['ent_0']);
        l.close();
        const file = path.join(dir, 'ledger.ndjson');
        truncateSync(file, Math.floor(readFileSync(file).length * cutAt));
        if (junk) appendFileSync(file, junk);
        const again = open(Ledger.open(dir));
        const ids = again.pending().map((p) => p.id);
        expect(ids.every((id) => recorded.some((r) => r.id === id))).toBe(true);
        again.recordSpooled([{ id: 'ent_after', seq: n + 1, session: 'sess_a' }]);
        again.close();
        expect(
          open(Ledger.open(dir))
            .pending()
            .map((p) => p.id),
        ).toContain('ent_after');
      }),
      fuzzParameters(0x5902, 100),
    );
  });

  it('cursor: any seq and offset is either a record boundary or rewound to one at or before it', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 5 }), fc.integer({ min: 0, max: 8 }), fc.integer({ min: 0, max: 5000 }), (n, seq, offset) => {
        const dir = tempDir();
        const s = openSpool(dir);
        if (n > 0) s.append(Array.from({ length: n }, (_, i) => ({ type: 'entry' as const, session: 'sess_a', ...pick(delivery(`ent_${i}`)) })));
        s.close();
        const reader = new SpoolReader(dir);
        const ends = new Map(reader.readAfter(0).map((it) => [it.record.seq, it.end] as const));
        const { cursor, rewound } = validateCursor(reader, { seq, offset });
        if (rewound === null) expect(seq === 0 ? offset === 0 : ends.get(seq) === offset).toBe(true);
        expect(cursor.seq).toBeLessThanOrEqual(seq);
        expect(cursor.seq === 0 ? cursor.offset === 0 : ends.get(cursor.seq) === cursor.offset).toBe(true);
      }),
      fuzzParameters(0x5903, 150),
    );
  });

  it('cursor.json holding anything at all reads as a cursor or as unreadable, never throws and never as absent', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.uint8Array({ maxLength: 60 }),
          fc.jsonValue().map((v) => new TextEncoder().encode(JSON.stringify(v) ?? '')),
        ),
        (bytes) => {
          const dir = tempDir();
          writeFileSync(path.join(dir, 'cursor.json'), bytes);
          const r = readCursorRecord(dir);
          expect(['ok', 'unreadable']).toContain(r.state);
          if (r.state === 'ok')
            expect(Number.isSafeInteger(r.value.seq) && Number.isSafeInteger(r.value.offset) && r.value.seq >= 0 && r.value.offset >= 0).toBe(true);
        },
      ),
      fuzzParameters(0x5904, 150),
    );
  });
});

function pick(d: { entry: Record<string, unknown>; signature: string }) {
  return { entry: d.entry as never, signature: d.signature };
}

function open<T>(r: { ok: true; value: T } | { ok: false; reason: string }): T {
  if (!r.ok) throw new Error(r.reason);
  return r.value;
}
