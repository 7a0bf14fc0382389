import { closeSync, constants, fstatSync, fsyncSync, openSync, writeSync } from 'node:fs';
import path from 'node:path';
import { type Result } from '../core/index.js';
import { writeFileAtomic } from '../util/fs-durable.js';
import { Fields } from '../util/shape.js';
import { STATE_FILES, readRecord, type RecordRead } from './records.js';
import { identityOf, replacedUnder } from './safe-open.js';
import type { SpoolReader } from './spool.js';

/** The last record the reader printed (seq 0 = none) and the byte offset just past it. */
export interface Cursor {
  seq: number;
  offset: number;
}

export const NO_CURSOR: Cursor = Object.freeze({ seq: 0, offset: 0 });

export function parseCursor(x: unknown): Result<Cursor> {
  const f = new Fields(x, 'cursor');
  return f.done<Cursor>({ seq: f.int('seq'), offset: f.int('offset') });
}

export function readCursorRecord(dir: string): RecordRead<Cursor> {
  return readRecord(dir, STATE_FILES.cursor, parseCursor);
}

/**
 * The cursor, or none when absent. An unreadable cursor also reads as none: re-printing
 * from the start can repeat records, while trusting garbage could skip them.
 */
export function readCursor(dir: string): Cursor {
  const r = readCursorRecord(dir);
  return r.state === 'ok' ? r.value : { ...NO_CURSOR };
}

/** Every cursor is written as exactly this many bytes, so an in-place step fully replaces the last. */
const WIDTH = 64;

/** `{"seq":…,"offset":…}` (what JSON.stringify writes for two integers) padded to WIDTH bytes, ASCII. */
const cursorText = (c: Cursor): string => `{"seq":${c.seq},"offset":${c.offset}}`.padEnd(WIDTH - 1) + '\n';

/**
 * 'utf8', not 'latin1': the text is ASCII, so the bytes are the same, and on Node 20 the name
 * 'latin1' goes through a slow encoding lookup whose code is compiled on every bridge run (−0.6 M
 * instructions of a warm run; docs/performance.md, warm bridge session 14).
 */
const cursorLine = (c: Cursor): Buffer => Buffer.from(cursorText(c), 'utf8');

/**
 * cursor.json's only writer: the reader advancing it, the consumer rewinding it, a collected
 * read committing it and legacy adoption seeding it all write through this class, in one
 * format (one JSON object padded to WIDTH bytes) and one discipline:
 *
 * - a cursor written on its own (a rewind, a collected read's commit) is an atomic replace
 *   (temp → fsync → rename → fsync dir): after a crash or a power loss the file is the old
 *   cursor or the new one, never half;
 * - the reader's `step` per printed record is one fixed-width pwrite at offset 0 into the
 *   file a replace made — a single syscall a killed process cannot half-complete, so a
 *   SIGKILL re-prints at most the record in flight (test/integration/bridge/kill.test.ts).
 *   An atomic replace per record cost ~1–2 ms each on this disk under load (a rename is a
 *   journal commit), 50–200 ms per 100 records against 2–5 ms in place (docs/bridge.md "The
 *   cursor");
 * - `commit` makes a batch's last step durable by fsyncing that file: the 64 bytes were
 *   written in place like every step, whose page the kernel may write back at any moment
 *   anyway, so the fsync only decides when, and a durable replace of the same bytes (a temp
 *   file, two fsyncs and a rename: 0.5–3 ms of a run's wall time here, against 0.2–0.5 for
 *   one fsync; docs/performance.md "Warm bridge (session 23, warm23)") would add no
 *   guarantee. The replace stays where the in-place file is not known durable by name: a
 *   batch whose first step had to replace the file, or a file someone else replaced under
 *   the batch (the consumer's rewind), whose replace the batch's last cursor then overrides
 *   as before.
 *
 * A concurrent reader of the cursor (the consumer) can at worst see a mix of two steps;
 * every reader validates the cursor against the spool (`validateCursor`) and rewinds when the
 * record ending at `offset` is not `seq`, so a torn read re-prints or acks less, never skips.
 */
export class CursorWriter {
  private readonly file: string;
  private fd: number | null = null;
  private last: Cursor | null = null;
  /** This batch's steps include a (non-durable) replace: the file's name may not be on disk yet. */
  private replaced = false;

  constructor(dir: string) {
    this.file = path.join(dir, STATE_FILES.cursor);
  }

  /**
   * Advance in place: visible at once, durable only at `commit`. A file that is not one of
   * this writer's (absent, or another width: an older build's) is replaced atomically instead.
   */
  step(cursor: Cursor): void {
    this.last = { seq: cursor.seq, offset: cursor.offset };
    const fd = this.open();
    if (fd === null) {
      writeFileAtomic(this.file, cursorLine(this.last), 0o600, 'none');
      this.replaced = true;
    } else writeSync(fd, cursorText(this.last), 0, 'utf8');
  }

  /** Make the last step durable and let go of the file; nothing to do without a step. */
  commit(): void {
    const fd = this.fd;
    this.fd = null;
    const last = this.last;
    const replaced = this.replaced;
    this.last = null;
    this.replaced = false;
    try {
      if (last !== null && fd !== null && !replaced) {
        fsyncSync(fd);
        // Still the file the steps wrote (no rewind replaced it): the fsync made their last durable.
        if (replacedUnder(identityOf(fd), this.file) === null) return;
      }
    } finally {
      if (fd !== null) closeSync(fd);
    }
    if (last !== null) writeFileAtomic(this.file, cursorLine(last));
  }

  /** The open cursor file when it is one of ours (a regular file of WIDTH bytes), else null. */
  private open(): number | null {
    if (this.fd !== null) return this.fd;
    let fd: number;
    try {
      fd = openSync(this.file, constants.O_WRONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      // Absent, a symlink or a FIFO nobody reads: the atomic replace puts a file of ours in its place.
      if (code === 'ENOENT' || code === 'ELOOP' || code === 'ENXIO') return null;
      throw e;
    }
    const st = fstatSync(fd);
    if (!st.isFile() || st.size !== WIDTH) {
      closeSync(fd);
      return null;
    }
    this.fd = fd;
    return fd;
  }
}

/** One durable cursor: an atomic replace (temp → fsync → rename → fsync dir). */
export function writeCursor(dir: string, cursor: Cursor): void {
  writeFileAtomic(path.join(dir, STATE_FILES.cursor), cursorLine(cursor));
}

export interface CursorCheck {
  cursor: Cursor;
  /** Why the cursor was moved back, or null when it was valid. */
  rewound: string | null;
}

/**
 * The record ending at `offset` (in the segment holding `seq`) must be the one with `seq`,
 * unless the segment was removed once printed. When it is not (the spool was truncated by
 * recovery, or replaced), rewind to the last record with seq ≤ the cursor's
 * that exists — never forward, so a new record written where an old one was is re-read,
 * not skipped.
 */
export function validateCursor(spool: SpoolReader, cursor: Cursor): CursorCheck {
  if (cursor.seq === 0) {
    return cursor.offset === 0
      ? { cursor: { ...NO_CURSOR }, rewound: null }
      : { cursor: { ...NO_CURSOR }, rewound: `cursor had seq 0 with offset ${cursor.offset}` };
  }
  if (spool.recordEndingAt(cursor.offset, cursor.seq)) return { cursor: { seq: cursor.seq, offset: cursor.offset }, rewound: null };
  // Below the oldest segment: the consumer removed those records because they were printed
  // (and acknowledged); nothing between the cursor and what is left is unread.
  if (cursor.seq < spool.headSeq()) return { cursor: { seq: cursor.seq, offset: cursor.offset }, rewound: null };
  let back: Cursor = { ...NO_CURSOR };
  for (const item of spool.readAfter(0, cursor.seq)) {
    if (item.record.seq > cursor.seq) break;
    back = { seq: item.record.seq, offset: item.end };
  }
  return {
    cursor: back,
    rewound: `no record ${cursor.seq} ends at byte ${cursor.offset} of ${spool.file}; rewound to seq ${back.seq}`,
  };
}
