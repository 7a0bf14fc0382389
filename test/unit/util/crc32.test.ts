import { crc32 as zlibCrc32 } from 'node:zlib';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { crc32 } from '../../../src/util/crc32.js';

describe('crc32', () => {
  it('matches the check value and node:zlib on edge cases', () => {
    expect(crc32('123456789')).toBe(0xcbf43926);
    for (const s of ['', 'a', '\u0000', 'é', '—', '\u2028', '𝄞', '\ud800', 'x'.repeat(70_000), '😀'.repeat(30_000)]) expect(crc32(s)).toBe(zlibCrc32(s));
  });

  it('gives what node:zlib gives for any text, one call after another', () => {
    fc.assert(
      fc.property(fc.array(fc.string({ unit: 'binary', maxLength: 300 }), { maxLength: 8 }), (texts) => {
        for (const t of texts) expect(crc32(t)).toBe(zlibCrc32(t));
      }),
      { numRuns: 300 },
    );
  });
});
