import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { sha256Hex } from '../../../src/util/sha256.js';

/** Strings across every padding boundary of SHA-256 (55, 56, 63, 64 bytes …) with 1- to 4-byte UTF-8 characters. */
function samples(): string[] {
  const alphabet = ['a', 'Z', '0', '\n', '"', 'é', '—', '\u2028', '𝄞', '\u0000'];
  let seed = 42;
  const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31);
  const out = ['', 'abc'];
  for (let len = 1; len <= 300; len++) out.push(Array.from({ length: len }, () => alphabet[next() % alphabet.length]).join(''));
  out.push('x'.repeat(100_000));
  return out;
}

describe('sha256Hex', () => {
  it('matches FIPS 180-4 test vectors', () => {
    expect(sha256Hex('')).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
    expect(sha256Hex('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(sha256Hex('abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq')).toBe('248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1');
  });

  it('gives what node:crypto gives, over every padding length and UTF-8 width', () => {
    for (const s of samples()) expect(sha256Hex(s), JSON.stringify(s.slice(0, 40))).toBe(createHash('sha256').update(s, 'utf8').digest('hex'));
  });
});
