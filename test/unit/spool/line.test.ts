import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { crc32 } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { lineEndingAt, openLine, readLines, sealLine } from '../../../src/spool/line.js';
import { tempDir } from './tmp.js';

const file = (content: string | Buffer): string => {
  const f = path.join(tempDir(), 'lines.ndjson');
  writeFileSync(f, content);
  return f;
};

describe('sealed lines', () => {
  it('seal and open round-trip; the sum is the crc32 of the line without it', () => {
    const line = sealLine({ a: 1, b: 'two' });
    expect(line).toBe(`{"a":1,"b":"two","sum":"${crc32('{"a":1,"b":"two"}').toString(16).padStart(8, '0')}"}`);
    expect(openLine(line)).toEqual({ ok: true, value: { a: 1, b: 'two', sum: line.slice(-10, -2) } });
    expect(openLine(line + '\r')).toMatchObject({ ok: true });
  });

  it('says why a line is not a record', () => {
    const line = sealLine({ a: 1 });
    expect(openLine('{"a":1}')).toEqual({ ok: false, reason: 'the line does not end with a sum' });
    expect(openLine(line + ' ')).toEqual({ ok: false, reason: 'the line does not end with a sum' });
    expect(openLine(line.replace('"a":1', '"a":2'))).toEqual({ ok: false, reason: 'the line does not match its sum' });
    // The sum is found by its position: exactly `,"sum":"` + 8 lowercase hex + `"}` at the end.
    const sum = line.slice(-10, -2);
    for (const tail of [sum.toUpperCase().replace(/^./, 'A'), sum.slice(1), `${sum}0`, `${sum.slice(0, 7)}g`]) {
      expect(openLine(`{"a":1,"sum":"${tail}"}`)).toEqual({ ok: false, reason: 'the line does not end with a sum' });
    }
    expect(openLine(`{"a":1,"sum":"${sum}"}}`)).toEqual({ ok: false, reason: 'the line does not end with a sum' });
    expect(openLine(`{"a":1 "sum":"${sum}"}`)).toEqual({ ok: false, reason: 'the line does not end with a sum' });
    expect(openLine(`,"sum":"${sum}"}`.slice(1))).toEqual({ ok: false, reason: 'the line does not end with a sum' });
    expect(openLine(`,"sum":"${crc32('}').toString(16).padStart(8, '0')}"}`)).toEqual({ ok: false, reason: 'the line is not JSON' });
    const notJson = '{"a":}';
    expect(openLine(`{"a":,"sum":"${crc32(notJson).toString(16).padStart(8, '0')}"}`)).toEqual({ ok: false, reason: 'the line is not JSON' });
  });
});

describe('readLines', () => {
  it('yields complete lines with their byte offsets, never a last piece without its newline', () => {
    const f = file('a\n\nccc\ntorn');
    expect([...readLines(f)]).toEqual([
      { text: 'a', start: 0, end: 2 },
      { text: '', start: 2, end: 3 },
      { text: 'ccc', start: 3, end: 7 },
    ]);
    expect([...readLines(f, 3)]).toEqual([{ text: 'ccc', start: 3, end: 7 }]);
  });

  it('joins a line that spans reads (64 KiB chunks), and multi-byte characters across them', () => {
    const long = 'é'.repeat(70_000); // 140,000 bytes: three chunks
    const f = file(`x\n${long}\ny\n`);
    const lines = [...readLines(f)];
    expect(lines.map((l) => l.text.length)).toEqual([1, 70_000, 1]);
    expect(lines[1]).toMatchObject({ text: long, start: 2, end: 140_003 });
    expect(lines[2]).toEqual({ text: 'y', start: 140_003, end: 140_005 });
  });

  it('a newline left in the read buffer by the previous 64 KiB read never ends a torn last piece', () => {
    // The first read fills the 64 KiB buffer; its byte 10 is '\n'. The second read returns only
    // the 10-byte torn tail, so that stale '\n' sits at exactly the end of what was read.
    const chunk = 64 * 1024;
    const first = Buffer.alloc(chunk, 'a');
    first[10] = 0x0a;
    first[chunk - 1] = 0x0a;
    const torn = Buffer.alloc(10, 'b');
    const lines = [...readLines(file(Buffer.concat([first, torn])))];
    expect(lines.map((l) => [l.start, l.end])).toEqual([
      [0, 11],
      [11, chunk],
    ]);
  });

  it('a missing file has no lines', () => {
    expect([...readLines(path.join(tempDir(), 'absent'))]).toEqual([]);
  });

  it('any other failure to open is thrown', () => {
    expect(() => [...readLines(tempDir())]).toThrow(/is a directory, not a regular file/);
  });
});

describe('lineEndingAt', () => {
  it('finds the line that ends exactly at a byte, the first one included', () => {
    const f = file('a\nbb\n');
    expect(lineEndingAt(f, 2)).toEqual({ text: 'a', start: 0, end: 2 });
    expect(lineEndingAt(f, 5)).toEqual({ text: 'bb', start: 2, end: 5 });
  });

  it('null when no line ends there: mid-line, past the end, before the second byte', () => {
    const f = file('\nab\ncd');
    expect(lineEndingAt(f, 1)).toBeNull();
    expect(lineEndingAt(f, 3)).toBeNull();
    expect(lineEndingAt(f, 6)).toBeNull();
    expect(lineEndingAt(f, 99)).toBeNull();
    expect(lineEndingAt(f, 4)).toEqual({ text: 'ab', start: 1, end: 4 });
  });

  it('reads a line longer than a chunk back to its start', () => {
    const long = 'z'.repeat(150_000);
    const f = file(`x\n${long}\n`);
    expect(lineEndingAt(f, 150_003)).toEqual({ text: long, start: 2, end: 150_003 });
    const first = file(`${long}\n`);
    expect(lineEndingAt(first, 150_001)).toEqual({ text: long, start: 0, end: 150_001 });
  });

  it('a line starting exactly on a chunk boundary', () => {
    const before = 'p'.repeat(65_535); // its newline is byte 65,535; the next line starts at 65,536
    const f = file(`${before}\nq\n`);
    expect(lineEndingAt(f, 65_538)).toEqual({ text: 'q', start: 65_536, end: 65_538 });
    expect(lineEndingAt(f, 65_536)).toEqual({ text: before, start: 0, end: 65_536 });
  });

  it('a missing file has no lines; another failure is thrown', () => {
    expect(lineEndingAt(path.join(tempDir(), 'absent'), 5)).toBeNull();
    expect(() => lineEndingAt(tempDir(), 5)).toThrow(/is a directory, not a regular file/);
  });
});
