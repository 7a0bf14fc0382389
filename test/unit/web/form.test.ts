import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeForm } from '../../../src/hub/server/web/http.js';

const entries = (form: URLSearchParams | null): [string, string][] | null => (form === null ? null : [...form.entries()]);

describe('decodeForm', () => {
  it('reads what a browser sends exactly as URLSearchParams does', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.string({ unit: 'grapheme' }), fc.string({ unit: 'grapheme' }))), (pairs) => {
        const body = new URLSearchParams(pairs).toString();
        expect(entries(decodeForm(Buffer.from(body)))).toEqual(entries(new URLSearchParams(body)));
      }),
      { seed: 18, numRuns: Number(process.env.FUZZ_RUNS ?? 300) },
    );
  });

  it('keeps a % that starts no escape, turns + into a space and skips empty pairs', () => {
    expect(entries(decodeForm(Buffer.from('a=100%&b=%zz+x&&c&d=%4')))).toEqual([
      ['a', '100%'],
      ['b', '%zz x'],
      ['c', ''],
      ['d', '%4'],
    ]);
  });

  it.each([
    ['an escaped byte that is never UTF-8', 'text=%FF'],
    ['a truncated escaped sequence', 'text=%C3'],
    ['an escaped overlong encoding', 'text=%C0%AF'],
    ['an escaped lone surrogate', 'text=%ED%A0%80'],
    ['a bad escape in a name', '%FE=x'],
  ])('refuses %s, where URLSearchParams would store U+FFFD', (_what, body) => {
    expect(new URLSearchParams(body).toString()).toContain('%EF%BF%BD');
    expect(decodeForm(Buffer.from(body))).toBeNull();
  });

  it('refuses raw bytes that are not UTF-8', () => {
    expect(decodeForm(Buffer.concat([Buffer.from('text='), Buffer.from([0xff])]))).toBeNull();
  });
});
