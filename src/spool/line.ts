import { closeSync, fstatSync, readSync } from 'node:fs';
import { crc32 } from '../util/crc32.js';
import { escapeUnsafe } from '../util/escape.js';
import { fail, ok, type Result } from '../core/index.js';
import { openStateFile } from './safe-open.js';

/**
 * NDJSON lines that carry their own checksum: `{…,"sum":"<8 hex>"}` where sum is the
 * crc32 of the same line's bytes without `,"sum":"…"`. A crash can leave garbage, not
 * only a short line, and a checksum is what tells a complete-looking garbage line from a
 * record. (The CRC is node:zlib's, computed without loading node:zlib: src/util/crc32.ts.)
 */
const SUM_KEY = ',"sum":"';
/** `,"sum":"` + 8 hex + `"}`: the last characters of every sealed line, found by position rather than a search. */
const SUM_TAIL_LENGTH = SUM_KEY.length + 8 + 2;
const HEX8 = /^[0-9a-f]{8}$/;

const hex8 = (n: number): string => n.toString(16).padStart(8, '0');

/**
 * Serialise a record (given without `sum`) as one sealed line, without the trailing '\n'.
 * escapeUnsafe keeps C1 controls, bidi overrides and U+2028/U+2029 (which JSON.stringify
 * leaves raw) out of the file: `--raw` prints the line verbatim and its sum still matches.
 */
export function sealLine(unsealed: object): string {
  const json = escapeUnsafe(JSON.stringify(unsealed));
  return `${json.slice(0, -1)},"sum":"${hex8(crc32(json))}"}`;
}

/** Check a line's sum and parse it. A trailing '\r' is tolerated (CRLF framing is not damage). */
export function openLine(text: string): Result<unknown> {
  const line = text.endsWith('\r') ? text.slice(0, -1) : text;
  const at = line.length - SUM_TAIL_LENGTH;
  const sum = line.slice(at + SUM_KEY.length, line.length - 2);
  if (at < 0 || !line.startsWith(SUM_KEY, at) || !line.endsWith('"}') || !HEX8.test(sum)) return fail('the line does not end with a sum');
  if (hex8(crc32(line.slice(0, at) + '}')) !== sum) return fail('the line does not match its sum');
  try {
    return ok(JSON.parse(line));
  } catch {
    return fail('the line is not JSON');
  }
}

export interface RawLine {
  /** The line's text without its '\n'. */
  text: string;
  /** Byte offset of its first byte. */
  start: number;
  /** Byte offset just past its '\n'. */
  end: number;
}

const CHUNK = 64 * 1024;
const NL = 0x0a;

/**
 * Complete lines of a file from byte `from`, split on the byte '\n' only (never readline:
 * U+2028/U+2029 are data). A final piece without '\n' is not a line and is not yielded.
 * A missing file has no lines.
 */
export function* readLines(file: string, from = 0): Generator<RawLine, void, undefined> {
  let fd: number;
  try {
    fd = openStateFile(file, 'read');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw e;
  }
  try {
    yield* linesAt(fd, from, Buffer.allocUnsafe(CHUNK));
  } finally {
    closeSync(fd);
  }
}

/** pread(2) as readSync makes it: bytes read into `buf` at `offset`, from the file's byte `position`. */
export type ReadAt = (fd: number, buf: Buffer, offset: number, length: number, position: number) => number;

/**
 * The complete lines of an open file from byte `from`, read through `buf` (any size; a line
 * longer than it is joined from several reads). For a file held open across reads (a waiting
 * reader's current segment): no open, fstat, close or buffer of its own per call. `read` is
 * readSync but for a reader's rehearsal, which reads bytes it made (SpoolReader.rehearseRead).
 */
export function* linesAt(fd: number, from: number, buf: Buffer, read: ReadAt = readSync): Generator<RawLine, void, undefined> {
  let pos = from;
  let pending: Buffer[] = [];
  let lineStart = from;
  for (;;) {
    const n = read(fd, buf, 0, buf.length, pos);
    if (n === 0) return;
    let i = 0;
    while (i < n) {
      const nl = buf.indexOf(NL, i);
      if (nl === -1 || nl >= n) {
        pending.push(Buffer.from(buf.subarray(i, n)));
        break;
      }
      // A line within the chunk is decoded in place: no Buffer of its own per line.
      const text = pending.length > 0 ? Buffer.concat([...pending, buf.subarray(i, nl)]).toString('utf8') : buf.toString('utf8', i, nl);
      const end = pos + nl + 1;
      const line: RawLine = { text, start: lineStart, end };
      pending = [];
      lineStart = end;
      i = nl + 1;
      yield line;
    }
    // A short read of a regular file is its end for now: no second read to be told so.
    if (n < buf.length) return;
    pos += n;
  }
}

/** The complete line that ends (with its '\n') exactly at byte `end`, or null when none does. */
export function lineEndingAt(file: string, end: number): RawLine | null {
  if (end < 2) return null;
  for (const line of linesBefore(file, end)) return line.end === end ? line : null;
  return null;
}

/**
 * The complete lines of a file before byte `end` (its size when not given), last first: from
 * the last '\n' before `end` back to byte 0. What follows that '\n' (a final piece without one,
 * a torn write) is not a line. A missing file has no lines. For reading a file's last records
 * without reading it all.
 */
export function* linesBefore(file: string, end?: number): Generator<RawLine, void, undefined> {
  let fd: number;
  try {
    fd = openStateFile(file, 'read');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw e;
  }
  try {
    let hi = end ?? fstatSync(fd).size;
    /** Just past the '\n' of the line being gathered; null until the first '\n' is found. */
    let lineEnd: number | null = null;
    /** That line's bytes found so far (in the chunks after this one), in order. */
    let parts: Buffer[] = [];
    while (hi > 0) {
      const lo = Math.max(0, hi - CHUNK);
      const buf = Buffer.allocUnsafe(hi - lo);
      // Short: the file ends before `end`, or shrank meanwhile. Either way no line ends there.
      if (readSync(fd, buf, 0, hi - lo, lo) !== hi - lo) return;
      let to = buf.length;
      for (;;) {
        const nl = to > 0 ? buf.lastIndexOf(NL, to - 1) : -1;
        if (nl === -1) break;
        if (lineEnd !== null) {
          yield { text: Buffer.concat([buf.subarray(nl + 1, to), ...parts]).toString('utf8'), start: lo + nl + 1, end: lineEnd };
          parts = [];
        }
        lineEnd = lo + nl + 1;
        to = nl;
      }
      if (lineEnd !== null) parts.unshift(buf.subarray(0, to));
      hi = lo;
    }
    if (lineEnd !== null) yield { text: Buffer.concat(parts).toString('utf8'), start: 0, end: lineEnd };
  } finally {
    closeSync(fd);
  }
}
