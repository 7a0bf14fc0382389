import { describe, expect, it } from 'vitest';
import { parseSpoolRecord } from '../../../src/spool/index.js';

// parseSpoolRecord reads the usual entry record with one test a field and leaves the rest to
// the full parse: both must give the same verdicts and the same record.
const record = {
  seq: 7,
  type: 'entry',
  received_at: '2026-12-02T16:09:48.990Z',
  session: 'sess_1',
  entry: { id: 'ent_1', kind: 'directive' },
  signature: 't=1,jti=jti_1,alg=hmac-sha256,v1=00',
  sum: '0badc0de',
};

describe('parseSpoolRecord: the lean path gives the full parse’s verdicts', () => {
  it.each<[string, Record<string, unknown>]>([
    ['seq 0', { ...record, seq: 0 }],
    ['a fractional seq', { ...record, seq: 1.5 }],
    ['a seq in a string', { ...record, seq: '7' }],
    ['a seq past 2^53', { ...record, seq: 2 ** 53 }],
    ['an empty entry id', { ...record, entry: { id: '' } }],
    ['an entry id that is only a line break', { ...record, entry: { id: '\n' } }],
    ['an entry id that is a number', { ...record, entry: { id: 1 } }],
    ['an entry that is an array', { ...record, entry: ['ent_1'] }],
    ['an entry that is null', { ...record, entry: null }],
    ['no signature', { ...record, signature: undefined }],
    ['a session that is null', { ...record, session: null }],
    ['no received_at', { ...record, received_at: undefined }],
    ['a sum that is a number', { ...record, sum: 1 }],
    ['an unknown type', { ...record, type: 'entries' }],
  ])('refuses %s', (_why, x) => {
    expect(parseSpoolRecord(JSON.parse(JSON.stringify(x))).ok).toBe(false);
  });

  it('returns the record field for field, dropping what it does not know', () => {
    const r = parseSpoolRecord({ ...record, extra: true });
    expect(r).toEqual({ ok: true, value: record });
    if (r.ok) expect(Object.keys(r.value)).toEqual(Object.keys(record));
  });

  it('an entry id with a line break and more is an id', () => {
    expect(parseSpoolRecord({ ...record, entry: { id: '\nx' } }).ok).toBe(true);
  });
});
