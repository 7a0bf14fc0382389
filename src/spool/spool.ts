import { closeSync, statSync, unlinkSync } from 'node:fs';
import path from 'node:path';
import type { Clock } from '../util/clock.js';
import { fsyncDir } from '../util/fs-durable.js';
import { fail, ok, type Result } from '../core/index.js';
import { AppendLog, type AppendLogFailure, type TailCut } from './append-log.js';
import { Fields, isObj } from '../util/shape.js';
import { lineEndingAt, linesAt, openLine, readLines, sealLine, type RawLine, type ReadAt } from './line.js';
import { countHeldRead } from './io-counts.js';
import { openStateFile } from './safe-open.js';
import { STATE_FILES } from './records.js';
import { sealedSegmentName, sealedSegments } from './segments.js';
import { watchFiles, type WatchOptions } from './watch.js';

/** An MA2H entry as spooled: verified by the consumer before it got here, kept verbatim. */
export type SpoolEntry = { id: string } & { [field: string]: unknown };

export interface SpoolEntryRecord {
  seq: number;
  type: 'entry';
  /** Our clock, ISO: when the consumer spooled it. Never part of the signed payload. */
  received_at: string;
  /** The Hub session it arrived under. */
  session: string;
  entry: SpoolEntry;
  /** The MA2H-Signature value, verbatim. */
  signature: string;
  sum: string;
}

export interface SpoolTransitionRecord {
  seq: number;
  type: 'transition';
  received_at: string;
  event: 'address_changed';
  from_session: string;
  to_session: string;
  from_address: string;
  to_address: string;
  /** e.g. 'session_lapsed'. */
  reason: string;
  sum: string;
}

export type SpoolRecord = SpoolEntryRecord | SpoolTransitionRecord;

/** What the consumer appends; the spool assigns seq, received_at and sum. */
export type NewSpoolRecord<E extends { readonly id: string } = { readonly id: string }> =
  { type: 'entry'; session: string; entry: E; signature: string } | Omit<SpoolTransitionRecord, 'seq' | 'received_at' | 'sum'>;

/**
 * The spool line of `r` at `seq`, received at `receivedAt`: its fields in their one order, sealed
 * with its sum. Every writer of spool lines (append, 0.9 adoption) makes them here.
 */
export function spoolLine(seq: number, receivedAt: string, r: NewSpoolRecord): string {
  return sealLine(
    r.type === 'entry'
      ? { seq, type: r.type, received_at: receivedAt, session: r.session, entry: r.entry, signature: r.signature }
      : {
          seq,
          type: r.type,
          received_at: receivedAt,
          event: r.event,
          from_session: r.from_session,
          to_session: r.to_session,
          from_address: r.from_address,
          to_address: r.to_address,
          reason: r.reason,
        },
  );
}

/** A record with where it sits in the file; `line` is its text verbatim (the `--raw` output). */
export interface SpoolItem {
  record: SpoolRecord;
  line: string;
  start: number;
  end: number;
}

/** What recovery at open cut off the tail, for bridge.log. */
export type SpoolRecovery = TailCut;

export class SpoolWriteError extends Error {
  constructor(
    readonly code: 'spool_write_failed' | 'spool_fsync_failed' | 'spool_broken',
    message: string,
  ) {
    super(message);
    this.name = 'SpoolWriteError';
  }
}

const SPOOL_FAILURES: Record<AppendLogFailure, SpoolWriteError['code']> = {
  write_failed: 'spool_write_failed',
  fsync_failed: 'spool_fsync_failed',
  broken: 'spool_broken',
};

/** Fields.str's `/./` for the entry's id: at least one character that is not a line break. */
const ANY_CHARACTER = /./;

/**
 * An entry record as the full parse below returns it, read with one test a field: every line a
 * reader prints passes here (docs/performance.md "Warm bridge (session 11)"). null is no
 * verdict: the full parse decides, and gives the reason when there is one.
 */
function leanEntryRecord(x: unknown): SpoolEntryRecord | null {
  if (!isObj(x)) return null;
  const { seq, type, received_at, session, entry, signature, sum } = x;
  if (type !== 'entry' || !Number.isSafeInteger(seq) || (seq as number) < 1) return null;
  if (typeof received_at !== 'string' || typeof session !== 'string' || typeof signature !== 'string' || typeof sum !== 'string') return null;
  if (!isObj(entry) || typeof entry.id !== 'string' || !ANY_CHARACTER.test(entry.id)) return null;
  return { seq: seq as number, type, received_at, session, entry: entry as SpoolEntry, signature, sum };
}

export function parseSpoolRecord(x: unknown): Result<SpoolRecord> {
  const lean = leanEntryRecord(x);
  if (lean !== null) return ok(lean);
  const f = new Fields(x, 'spool record');
  const type = f.oneOf('type', ['entry', 'transition']);
  const seq = f.int('seq', 1);
  const received_at = f.str('received_at');
  if (type === 'entry') {
    const entry = new Fields(f.raw('entry'), 'spool record entry');
    entry.str('id', /./);
    const checked = entry.done(null);
    if (!checked.ok) return fail(checked.reason);
    return f.done<SpoolEntryRecord>({
      seq,
      type,
      received_at,
      session: f.str('session'),
      entry: f.raw('entry') as SpoolEntry,
      signature: f.str('signature'),
      sum: f.str('sum'),
    });
  }
  return f.done<SpoolTransitionRecord>({
    seq,
    type,
    received_at,
    event: f.oneOf('event', ['address_changed']),
    from_session: f.str('from_session'),
    to_session: f.str('to_session'),
    from_address: f.str('from_address'),
    to_address: f.str('to_address'),
    reason: f.str('reason'),
    sum: f.str('sum'),
  });
}

/** A spool line's text (its sum checked) as a record, or why it is not one. */
export function parseSpoolLine(text: string): Result<SpoolRecord> {
  const opened = openLine(text);
  return opened.ok ? parseSpoolRecord(opened.value) : opened;
}

/** A raw line as the record with sequence number `seq`, or why it is not. */
function itemOf(line: RawLine, seq: number): Result<SpoolItem> {
  const parsed = parseSpoolLine(line.text);
  if (!parsed.ok) return parsed;
  if (parsed.value.seq !== seq) return fail(`the line has seq ${parsed.value.seq} where ${seq} belongs`);
  const text = line.text.endsWith('\r') ? line.text.slice(0, -1) : line.text;
  return ok({ record: parsed.value, line: text, start: line.start, end: line.end });
}

/** One file of the spool: a sealed segment, or the current one (`first` is Infinity while it holds no readable record). */
interface Segment {
  file: string;
  first: number;
}

/** Where a walk begins: the segment, the byte in it, and the seq of the record just before. */
interface WalkStart {
  index: number;
  offset: number;
  seq: number;
}

/** Where a walk ended: the segment it reached, the byte just past its last valid record there, and why it stopped early (or null). */
interface WalkEnd {
  index: number;
  end: number;
  stop: string | null;
}

/** The complete lines of a spool file from a byte: readLines, or a held file's (SpoolReader.hold). */
type LinesOf = (file: string, from: number) => Iterable<RawLine>;

/**
 * Walks valid, contiguous records from a position across the segments that follow it; stops
 * at the first line that is not the next record (a segment's first record must follow the
 * previous segment's last). A segment removed meanwhile reads as empty, and the gap stops the walk.
 */
function* walk(segments: readonly Segment[], from: WalkStart, lines: LinesOf = readLines): Generator<SpoolItem, WalkEnd, undefined> {
  let seq = from.seq;
  const last = segments.length - 1;
  for (let i = from.index; i <= last; i++) {
    const file = segments[i]!.file;
    let end = i === from.index ? from.offset : 0;
    for (const line of lines(file, end)) {
      const item = itemOf(line, seq + 1);
      if (!item.ok) return { index: i, end, stop: `${i < last ? `${path.basename(file)} ` : ''}byte ${line.start}: ${item.reason}` };
      seq += 1;
      end = item.value.end;
      yield item.value;
    }
    if (i === last) return { index: i, end, stop: null };
  }
  return { index: from.index, end: from.offset, stop: null };
}

/** The seq of a file's first record, or null when its first line is not one. */
function firstSeqOf(file: string): number | null {
  const lines = readLines(file);
  try {
    const first = lines.next();
    if (first.done) return null;
    const opened = openLine(first.value.text);
    const parsed = opened.ok ? parseSpoolRecord(opened.value) : opened;
    return parsed.ok ? parsed.value.seq : null;
  } finally {
    lines.return();
  }
}

/** The segment holding `seq` (the last whose first record is at or before it), or -1. */
function holding(segments: readonly Segment[], seq: number): number {
  for (let i = segments.length - 1; i >= 0; i--) if (segments[i]!.first <= seq) return i;
  return -1;
}

/** A walk from the start of a segment: the record before its first. */
const segmentStart = (segments: readonly Segment[], index: number): WalkStart => {
  const first = segments[index]!.first;
  return { index, offset: 0, seq: Number.isFinite(first) ? first - 1 : 0 };
};

/** A walk that reaches every record with seq ≥ `seq` that the spool still holds. */
function walkReaching(segments: readonly Segment[], seq: number): WalkStart {
  return segmentStart(segments, Math.max(0, holding(segments, seq)));
}

/** Where an entry id was spooled: for re-acking a redelivered duplicate without spooling it twice. */
export interface SpooledAt {
  seq: number;
  session: string;
}

export interface SpoolScan {
  lastSeq: number;
  /** Byte offset just past the last valid record, in the segment the walk ended in. */
  end: number;
  /** That segment: the current one unless the walk stopped in a sealed one. */
  index: number;
  /** Entry id → where it was first spooled. */
  entries: Map<string, SpooledAt>;
  /**
   * Session → the address_changed record that moved away from it (the last one, should an
   * older build have spooled two): which sessions were replaced, and by which.
   */
  successors: Map<string, SpoolTransitionRecord>;
  /** Why the scan stopped before the end of the file (a complete line that is not the next record), or null. */
  stop: string | null;
}

/** The spool's files, oldest first; the current segment last. */
function segmentsOf(dir: string): Segment[] {
  const current = path.join(dir, STATE_FILES.spool);
  return [...sealedSegments(dir), { file: current, first: firstSeqOf(current) ?? Infinity }];
}

/** Records from a walk's start to its end, with what dedup and the reader's labels need. */
function scanFrom(segments: readonly Segment[], from: WalkStart): SpoolScan {
  const entries = new Map<string, SpooledAt>();
  const successors = new Map<string, SpoolTransitionRecord>();
  const it = walk(segments, from);
  let lastSeq = from.seq;
  for (;;) {
    const step = it.next();
    if (step.done) return { lastSeq, end: step.value.end, index: step.value.index, entries, successors, stop: step.value.stop };
    const r = step.value.record;
    lastSeq = r.seq;
    if (r.type === 'transition') successors.set(r.from_session, r);
    else if (!entries.has(r.entry.id)) entries.set(r.entry.id, { seq: r.seq, session: r.session });
  }
}

/**
 * Read access to a spool. Readers never modify the files: only the consumer (holding the
 * lock) recovers a damaged tail or removes segments, so a reader treats the first line that
 * is not the next record as the end for now. A cursor's offset is a byte offset in the
 * segment holding its seq.
 */
export class SpoolReader {
  /** The current segment (the only file of a spool that was never sealed). */
  readonly file: string;
  /** While holding: the current segment as last opened, and the buffer its reads go through. */
  private held: { fd: number; buf: Buffer } | null = null;
  private holding = false;

  constructor(readonly dir: string) {
    this.file = path.join(dir, STATE_FILES.spool);
  }

  /**
   * Keep the current segment open between `readFrom`s until `release` (a reader waiting for
   * its wake: the wake then reads the new record with one pread, not an open, an fstat, a
   * buffer and a close). What a held file gives is only ever taken when it is the record
   * after the cursor (seq + 1; seqs are unique and rising across segments, and a line is
   * never rewritten), so a file sealed or replaced meanwhile cannot make it read the wrong
   * record: a read that finds nothing there lets the file go and holds the current one.
   */
  hold(): void {
    this.holding = true;
    if (this.held === null) this.openHeld();
  }

  release(): void {
    this.holding = false;
    this.letGo();
  }

  private letGo(): void {
    if (this.held !== null) closeSync(this.held.fd);
    this.held = null;
  }

  /** Open the current segment to hold it (none yet: nothing held). */
  private openHeld(): { fd: number; buf: Buffer } | null {
    try {
      this.held = { fd: openStateFile(this.file, 'read'), buf: Buffer.allocUnsafe(HELD_READ_BYTES) };
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    }
    return this.held;
  }

  /** The lines of the current segment from `from`, through the held file. */
  private readonly heldLines: LinesOf = (_file, from) => {
    const held = this.held ?? this.openHeld();
    if (held === null) return [];
    countHeldRead();
    return linesAt(held.fd, from, held.buf);
  };

  private segments(): Segment[] {
    return segmentsOf(this.dir);
  }

  /** Every record the spool still holds, from its oldest segment. */
  scan(): SpoolScan {
    const segments = this.segments();
    return scanFrom(segments, segmentStart(segments, 0));
  }

  /** The last valid record's seq, read from the newest segment whose first record is known (0: none). */
  lastSeq(): number {
    const segments = this.segments();
    const newest = segments.findLastIndex((s) => Number.isFinite(s.first));
    return newest === -1 ? 0 : scanFrom(segments, segmentStart(segments, newest)).lastSeq;
  }

  /**
   * The seq of the oldest record the spool holds (or its first record would have, 1, when it
   * holds none): a cursor below it points at records removed because they were printed.
   */
  headSeq(): number {
    const first = this.segments()[0]!.first;
    return Number.isFinite(first) ? first : 1;
  }

  /** The entry ids present (a copy). */
  entryIds(): ReadonlySet<string> {
    return new Set(this.scan().entries.keys());
  }

  /** Records with seq > `seq`, from the segment holding seq + 1. */
  readAfter(seq: number, limit = Infinity): SpoolItem[] {
    const items: SpoolItem[] = [];
    if (limit <= 0) return items;
    const segments = this.segments();
    for (const item of walk(segments, walkReaching(segments, seq + 1))) {
      if (item.record.seq <= seq) continue;
      items.push(item);
      if (items.length >= limit) break;
    }
    return items;
  }

  /**
   * Records after a cursor, reading from its byte offset in its segment. If the record at
   * that offset is not seq + 1 (a stale offset), falls back to reading from the segment
   * holding seq + 1: re-read, never skip. A cursor below the oldest segment (those records
   * were removed once printed) reads from the oldest.
   */
  readFrom(cursor: { seq: number; offset: number }, limit = Infinity): SpoolItem[] {
    if (limit <= 0) return [];
    // The common case, a reader woken by an append: the record after the cursor is at its offset
    // in the current segment. Tried first without listing the segments (a readdir and an open of
    // each segment for its first seq, twice per wake, was most of a waiting reader's time from
    // wake to print). Only a record that is seq + 1 is taken: seqs are unique and rising across
    // segments, so that is the next record wherever the cursor lives (seq 1 at byte 0 for a
    // reader that printed nothing yet); anything else reads the segments as below.
    const items = this.atCursor(cursor, limit, this.holding ? this.heldLines : readLines);
    if (items.length > 0) return items;
    if (this.held !== null) {
      // Nothing after the cursor in the file held (a wake by another file, or the file was
      // sealed): the current segment is held from here on, opened now rather than on the next wake.
      this.letGo();
      this.openHeld();
    }
    const segments = this.segments();
    const at = cursor.seq === 0 ? -1 : holding(segments, cursor.seq);
    const it = walk(segments, at === -1 ? walkReaching(segments, cursor.seq + 1) : { index: at, offset: cursor.offset, seq: cursor.seq });
    for (;;) {
      const step = it.next();
      if (step.done) {
        if (items.length === 0 && step.value.stop !== null) return this.readAfter(cursor.seq, limit);
        return items;
      }
      if (step.value.record.seq <= cursor.seq) continue;
      items.push(step.value);
      if (items.length >= limit) {
        it.return({ index: at, end: step.value.end, stop: null });
        return items;
      }
    }
  }

  /** The records from the cursor's offset in the current segment, read through `lines`, that follow it (seq + 1, …). */
  private atCursor(cursor: { seq: number; offset: number }, limit: number, lines: LinesOf): SpoolItem[] {
    const items: SpoolItem[] = [];
    for (const item of walk([{ file: this.file, first: cursor.seq + 1 }], { index: 0, offset: cursor.offset, seq: cursor.seq }, lines)) {
      items.push(item);
      if (items.length >= limit) break;
    }
    return items;
  }

  /**
   * What a wake's read runs once the held file's bytes are in — the walk from the cursor, the
   * lines found in the bytes read, each line's sum, shape and seq — on `bytes` instead (a
   * made-up spool file whose first record is seq 1), through the held read buffer: the records
   * it takes. Opens and reads nothing (a waiting reader's rehearsal, src/reader/rehearse.ts).
   */
  rehearseRead(bytes: Buffer): SpoolItem[] {
    const fromBytes: ReadAt = (_fd, buf, offset, length, position) =>
      position >= bytes.length ? 0 : bytes.copy(buf, offset, position, Math.min(bytes.length, position + length));
    const buf = this.held?.buf ?? Buffer.allocUnsafe(HELD_READ_BYTES);
    return this.atCursor({ seq: 0, offset: 0 }, Infinity, (_file, from) => linesAt(-1, from, buf, fromBytes));
  }

  /** The record whose line ends exactly at byte `end` of its segment, if that line is a valid record with seq `seq`. */
  recordEndingAt(end: number, seq: number): SpoolItem | null {
    const segments = this.segments();
    const at = holding(segments, seq);
    if (at === -1) return null;
    const line = lineEndingAt(segments[at]!.file, end);
    if (!line) return null;
    const item = itemOf(line, seq);
    return item.ok ? item.value : null;
  }

  /** Call onChange when the spool may have grown (fs.watch on the entry dir plus a slow safety poll). Returns a disposer. */
  watch(onChange: () => void, opts: WatchOptions = {}): () => void {
    return watchFiles(this.dir, [STATE_FILES.spool], onChange, opts);
  }
}

/** A held segment's read buffer: a wake's records are a few lines; a longer run is read in several. */
const HELD_READ_BYTES = 16 * 1024;

/** When the current segment is sealed and a new one begun: whichever bound it reaches first. */
export interface SegmentBounds {
  records: number;
  bytes: number;
}

export const DEFAULT_SEGMENT: SegmentBounds = Object.freeze({ records: 1000, bytes: 8 * 1024 * 1024 });

/** How long printed, acknowledged records stay: a segment goes once it is outside either bound. */
export interface Retention {
  /** At least this many printed and acknowledged records newer than it. */
  records: number;
  /** Or its newest record older than this (our clock). */
  maxAgeMs: number;
  /** Or more than this many bytes of printed and acknowledged records in the sealed segments newer than it. */
  bytes: number;
}

export interface CompactOptions {
  /** Every record up to here is printed (the validated cursor) and settled at the Hub (the ledger). */
  through: number;
  retain: Retention;
  nowMs: number;
  /**
   * How long the ids of removed records still count for dedup in this process: a delivery the
   * Hub sent before it took the acknowledgement may still be on its way (twice the replay
   * window and a margin: a later one fails the freshness check).
   */
  holdMs: number;
}

export interface Compaction {
  /** Segments removed, oldest first, each as its first and last seq and bytes. */
  dropped: { first: number; last: number; bytes: number }[];
  /** Why removing stopped early (the files stay; only disk space is at stake), or null. */
  failed: string | null;
}

/**
 * The consumer's spool. `open` recovers first: the current segment is cut back to the last
 * line that is the next record with a valid sum, before anything is appended — appending
 * after a torn line would glue two records into one garbage line and lose both.
 */
export class Spool extends SpoolReader {
  private seq: number;
  /** The seq of the current segment's first record; null while it holds none. */
  private currentFirst: number | null;
  /** First seqs of the sealed segments, oldest first. */
  private readonly sealed: number[];
  private readonly entries: Map<string, SpooledAt>;
  private readonly successors: Map<string, SpoolTransitionRecord>;
  /** Removed segments whose ids still count for dedup until `until`. */
  private readonly retiring: { through: number; until: number }[] = [];

  private constructor(
    dir: string,
    private readonly clock: Clock,
    private readonly log: AppendLog,
    private readonly bounds: SegmentBounds,
    segments: readonly Segment[],
    scan: SpoolScan,
  ) {
    super(dir);
    this.seq = scan.lastSeq;
    this.sealed = segments.slice(0, -1).map((s) => s.first);
    const current = segments.at(-1)!.first;
    this.currentFirst = scan.end > 0 && Number.isFinite(current) ? current : null;
    this.entries = scan.entries;
    this.successors = scan.successors;
  }

  /** What recovery at open cut off the tail, or null. */
  get recovery(): SpoolRecovery | null {
    return this.log.cut;
  }

  /**
   * Open for appending (consumer only, under the lock). Reads from the segment holding
   * `from` + 1 — the records before it are printed and settled, so dedup no longer needs
   * their ids — to the end, recovering the current segment's tail.
   */
  static open(dir: string, opts: { clock: Clock; from?: number; segment?: SegmentBounds }): Result<Spool> {
    const reader = new SpoolReader(dir);
    const segments = segmentsOf(dir);
    const opened = AppendLog.open({ file: reader.file, what: 'spool', error: (kind, message) => new SpoolWriteError(SPOOL_FAILURES[kind], message) }, () => {
      const scan = scanFrom(segments, walkReaching(segments, (opts.from ?? 0) + 1));
      if (scan.index !== segments.length - 1) {
        throw new Error(
          `the sealed spool segment ${segments[scan.index]!.file} is damaged (${scan.stop}): a sealed segment is never written again, so this damage came from outside oh-hai. ` +
            'Move that file and the later bridge.*.ndjson segments out of the entry to go on; what was not acknowledged is delivered again by the Hub',
        );
      }
      return scan;
    });
    if (!opened.ok) return opened;
    return ok(new Spool(dir, opts.clock, opened.value.log, opts.segment ?? DEFAULT_SEGMENT, segments, opened.value.valid));
  }

  override lastSeq(): number {
    return this.seq;
  }

  override entryIds(): ReadonlySet<string> {
    return new Set(this.entries.keys());
  }

  /** Dedup: is this entry id already in the spool? */
  hasEntry(id: string): boolean {
    return this.entries.has(id);
  }

  /** Where an entry id was spooled, or null: a redelivered duplicate is re-recorded in the ledger with this. */
  spooledAt(id: string): SpooledAt | null {
    return this.entries.get(id) ?? null;
  }

  /** Entry records read or written since open with seq > `seq`, by seq: what a ledger that lost its tail must still hold. */
  entriesAfter(seq: number): ({ id: string } & SpooledAt)[] {
    const out: ({ id: string } & SpooledAt)[] = [];
    for (const [id, at] of this.entries) if (at.seq > seq) out.push({ id, ...at });
    return out;
  }

  /**
   * The address_changed record that moved away from `session`, or null. A transition is
   * spooled before session.json names the new session: when session.json still names
   * `session`, the connection that spooled it was stopped in between, and this says which
   * session it had registered. The record is the spool's last then, so always in what open read.
   */
  successorOf(session: string): SpoolTransitionRecord | null {
    return this.successors.get(session) ?? null;
  }

  /** Byte size of the valid current segment. */
  end(): number {
    return this.log.size;
  }

  /**
   * Whether `cursor` is just past the last record this writer appended (that record is `seq`
   * and its line ends at `offset` of the current segment): what a reader that caught up
   * writes. Known without reading the file, since only this writer appends to it; the check
   * `validateCursor` makes of such a cursor reads the segment listing and two of its lines.
   */
  endsLastRecord(cursor: { seq: number; offset: number }): boolean {
    return this.currentFirst !== null && cursor.seq === this.seq && cursor.offset === this.log.size;
  }

  /**
   * Append records as one write and one fsync; returns them as written. A failed write or
   * fsync throws SpoolWriteError and leaves the spool unusable: a failed fsync is never
   * retried (the page cache may have dropped the data while reporting success later), the
   * consumer stops, and the next open recovers the tail. The Hub redelivers what was not acked.
   * A current segment that reached its bounds is sealed first.
   */
  append<E extends { readonly id: string }>(records: readonly NewSpoolRecord<E>[]): SpoolRecord[] {
    this.log.ensureUsable();
    if (records.length === 0) return [];
    const receivedAt = new Date(this.clock.now()).toISOString();
    const written: SpoolRecord[] = [];
    const lines: string[] = [];
    let seq = this.seq;
    for (const r of records) {
      seq += 1;
      const line = spoolLine(seq, receivedAt, r);
      const parsed = parseSpoolRecord(JSON.parse(line));
      if (!parsed.ok) throw new TypeError(`refusing to spool a malformed record: ${parsed.reason}`);
      written.push(parsed.value);
      lines.push(line + '\n');
    }
    if (this.currentFirst !== null && (this.seq - this.currentFirst + 1 >= this.bounds.records || this.log.size >= this.bounds.bytes)) {
      this.log.seal(path.join(this.dir, sealedSegmentName(this.currentFirst)));
      this.sealed.push(this.currentFirst);
      this.currentFirst = null;
    }
    this.log.append(lines.join(''));
    this.currentFirst ??= this.seq + 1;
    this.seq = seq;
    for (const r of written) {
      if (r.type === 'transition') this.successors.set(r.from_session, r);
      else if (!this.entries.has(r.entry.id)) this.entries.set(r.entry.id, { seq: r.seq, session: r.session });
    }
    return written;
  }

  /** Could the oldest sealed segment go with records settled up to `settled`? (No disk access: ask before reading the cursor.) */
  compactable(settled: number): boolean {
    const next = this.sealed[1] ?? this.currentFirst;
    return this.sealed.length > 0 && next !== null && next - 1 <= settled;
  }

  /**
   * Remove sealed segments, oldest first, while every record in one is at or before
   * `through` and it is outside the retention (enough newer settled records, or old enough).
   * Each removal is one unlink, so a kill at any instant leaves a contiguous run of segments
   * that ends with the current one. The newest sealed segment stays while the current one
   * holds no record: it is what says where the spool ends.
   */
  compact(opts: CompactOptions): Compaction {
    const dropped: Compaction['dropped'] = [];
    let failed: string | null = null;
    const sizes = this.settledSegmentSizes(opts.through);
    let newerBytes = sizes.reduce((n, b) => n + b, 0) - (sizes[0] ?? 0);
    while (this.sealed.length > 0) {
      const first = this.sealed[0]!;
      const next = this.sealed[1] ?? this.currentFirst;
      if (next === null || next - 1 > opts.through) break;
      const last = next - 1;
      const file = path.join(this.dir, sealedSegmentName(first));
      let bytes = 0;
      try {
        bytes = statSync(file).size;
        const inside = opts.through - last < opts.retain.records && newerBytes <= opts.retain.bytes;
        if (inside && !newestOlderThan(file, bytes, last, opts.nowMs - opts.retain.maxAgeMs)) break;
        unlinkSync(file);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'ENOENT') {
          failed = `removing ${file} failed: ${(e as Error).message}`;
          break;
        }
      }
      this.sealed.shift();
      sizes.shift();
      newerBytes -= sizes[0] ?? 0;
      dropped.push({ first, last, bytes });
    }
    if (dropped.length > 0) {
      try {
        fsyncDir(this.dir);
      } catch (e) {
        failed ??= `fsync of ${this.dir} failed: ${(e as Error).message}`;
      }
      this.retiring.push({ through: dropped.at(-1)!.last, until: opts.nowMs + opts.holdMs });
    }
    this.forgetRetired(opts.nowMs);
    return { dropped, failed };
  }

  /** The size of each sealed segment, oldest first, as far as every record in it is at or before `through`. */
  private settledSegmentSizes(through: number): number[] {
    const sizes: number[] = [];
    for (let i = 0; i < this.sealed.length; i++) {
      const next = this.sealed[i + 1] ?? this.currentFirst;
      if (next === null || next - 1 > through) break;
      try {
        sizes.push(statSync(path.join(this.dir, sealedSegmentName(this.sealed[i]!))).size);
      } catch {
        sizes.push(0);
      }
    }
    return sizes;
  }

  /** Ids of removed records whose hold has passed leave the dedup map (it holds them in seq order). */
  private forgetRetired(nowMs: number): void {
    while (this.retiring.length > 0 && this.retiring[0]!.until <= nowMs) {
      const { through } = this.retiring.shift()!;
      for (const [id, at] of this.entries) {
        if (at.seq > through) break;
        this.entries.delete(id);
      }
    }
  }

  close(): void {
    this.log.close();
  }
}

/** Whether a sealed segment's newest record (seq `last`) was spooled before `cutoffMs`; unreadable is not old. */
function newestOlderThan(file: string, size: number, last: number, cutoffMs: number): boolean {
  const line = lineEndingAt(file, size);
  const item = line ? itemOf(line, last) : null;
  return item !== null && item.ok && Date.parse(item.value.record.received_at) < cutoffMs;
}

/**
 * How the reader labels an entry record: one that arrived under a session this entry has
 * since moved away from (an address_changed was spooled) is "possibly bounced" — its
 * sender may already have had the bounce — never fresh mail.
 */
export function entryStanding(
  record: SpoolEntryRecord,
  currentSession: string,
  replacedSessions: Pick<ReadonlySet<string>, 'has'>,
): 'fresh' | 'possibly_bounced' {
  return record.session !== currentSession && replacedSessions.has(record.session) ? 'possibly_bounced' : 'fresh';
}
