import { closeSync, openSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { readToEnd } from '../../../src/spool/safe-open.js';
import { tempDir } from './tmp.js';

const readWhole = (bytes: Buffer): Buffer => {
  const file = path.join(tempDir(), 'f');
  writeFileSync(file, bytes);
  const fd = openSync(file, 'r');
  try {
    return readToEnd(fd);
  } finally {
    closeSync(fd);
  }
};

describe('readToEnd', () => {
  afterEach(() => vi.restoreAllMocks());

  it.each([0, 1, 64 * 1024 - 1, 64 * 1024, 64 * 1024 + 1, 200_000])('reads every byte of a %i-byte file', (size) => {
    const bytes = Buffer.alloc(size);
    for (let i = 0; i < size; i++) bytes[i] = (i * 7 + (i >> 9)) & 0xff;
    expect(readWhole(bytes).equals(bytes)).toBe(true);
  });

  // Buffer.concat and Buffer.from are code Node 20 compiles on every bridge run only for this (docs/performance.md "Warm bridge (session 14)").
  it('reads a state file without concatenating or copying chunks', () => {
    const bytes = Buffer.from('{"seq":1}\n');
    const concat = vi.spyOn(Buffer, 'concat');
    const from = vi.spyOn(Buffer, 'from');
    expect(readWhole(bytes).equals(bytes)).toBe(true);
    expect(concat).not.toHaveBeenCalled();
    expect(from).not.toHaveBeenCalled();
  });
});
