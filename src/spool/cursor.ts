import { type Result } from '../core/index.js';
import { Fields } from './fields.js';
import { ENTRY_FILES, readRecord, writeRecord, type RecordRead } from './records.js';
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
  return readRecord(dir, ENTRY_FILES.cursor, parseCursor);
}

/**
 * The cursor, or none when absent. An unreadable cursor also reads as none: re-printing
 * from the start can repeat records, while trusting garbage could skip them.
 */
export function readCursor(dir: string): Cursor {
  const r = readCursorRecord(dir);
  return r.state === 'ok' ? r.value : { ...NO_CURSOR };
}

/** Atomic replace + fsync: after a crash the cursor is the old one or the new one. */
export function writeCursor(dir: string, cursor: Cursor): void {
  writeRecord(dir, ENTRY_FILES.cursor, { seq: cursor.seq, offset: cursor.offset });
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
