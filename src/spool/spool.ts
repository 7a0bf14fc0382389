import path from 'node:path';
import type { Clock } from '../util/clock.js';
import { fail, ok, type Result } from '../core/index.js';
import { AppendLog, type AppendLogFailure, type TailCut } from './append-log.js';
import { Fields } from './fields.js';
import { lineEndingAt, openLine, readLines, sealLine, type RawLine } from './line.js';
import { ENTRY_FILES } from './records.js';
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
  | { type: 'entry'; session: string; entry: E; signature: string }
  | Omit<SpoolTransitionRecord, 'seq' | 'received_at' | 'sum'>;

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

export function parseSpoolRecord(x: unknown): Result<SpoolRecord> {
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

/** A raw line as the record with sequence number `seq`, or why it is not. */
function itemOf(line: RawLine, seq: number): Result<SpoolItem> {
  const opened = openLine(line.text);
  if (!opened.ok) return opened;
  const parsed = parseSpoolRecord(opened.value);
  if (!parsed.ok) return parsed;
  if (parsed.value.seq !== seq) return fail(`the line has seq ${parsed.value.seq} where ${seq} belongs`);
  const text = line.text.endsWith('\r') ? line.text.slice(0, -1) : line.text;
  return ok({ record: parsed.value, line: text, start: line.start, end: line.end });
}

/** Walks valid, contiguous records from a position; stops at the first line that is not the next record. */
function* walk(file: string, from: { seq: number; offset: number }): Generator<SpoolItem, { end: number; stop: string | null }, undefined> {
  let seq = from.seq;
  let end = from.offset;
  for (const line of readLines(file, from.offset)) {
    const item = itemOf(line, seq + 1);
    if (!item.ok) return { end, stop: `byte ${line.start}: ${item.reason}` };
    seq += 1;
    end = item.value.end;
    yield item.value;
  }
  return { end, stop: null };
}

/** Where an entry id was spooled: for re-acking a redelivered duplicate without spooling it twice. */
export interface SpooledAt {
  seq: number;
  session: string;
}

export interface SpoolScan {
  lastSeq: number;
  /** Byte offset just past the last valid record. */
  end: number;
  /** Entry id → where it was first spooled. */
  entries: Map<string, SpooledAt>;
  /** Sessions an address_changed record moved away from. */
  replacedSessions: Set<string>;
  /** Why the scan stopped before the end of the file (a complete line that is not the next record), or null. */
  stop: string | null;
}

/**
 * Read access to a spool. Readers never modify the file: only the consumer (holding the
 * lock) recovers a damaged tail, so a reader treats the first line that is not the next
 * record as the end for now.
 */
export class SpoolReader {
  readonly file: string;

  constructor(readonly dir: string) {
    this.file = path.join(dir, ENTRY_FILES.spool);
  }

  scan(): SpoolScan {
    const entries = new Map<string, SpooledAt>();
    const replacedSessions = new Set<string>();
    const it = walk(this.file, { seq: 0, offset: 0 });
    let lastSeq = 0;
    for (;;) {
      const step = it.next();
      if (step.done) return { lastSeq, end: step.value.end, entries, replacedSessions, stop: step.value.stop };
      const r = step.value.record;
      lastSeq = r.seq;
      if (r.type === 'transition') replacedSessions.add(r.from_session);
      else if (!entries.has(r.entry.id)) entries.set(r.entry.id, { seq: r.seq, session: r.session });
    }
  }

  lastSeq(): number {
    return this.scan().lastSeq;
  }

  /** The entry ids present (a copy). */
  entryIds(): ReadonlySet<string> {
    return new Set(this.scan().entries.keys());
  }

  /** Records with seq > `seq`, scanning from the start of the file. */
  readAfter(seq: number, limit = Infinity): SpoolItem[] {
    const items: SpoolItem[] = [];
    if (limit <= 0) return items;
    for (const item of walk(this.file, { seq: 0, offset: 0 })) {
      if (item.record.seq <= seq) continue;
      items.push(item);
      if (items.length >= limit) break;
    }
    return items;
  }

  /**
   * Records after a cursor, reading from its byte offset. If the record at that offset is
   * not seq + 1 (a stale offset), falls back to scanning from the start: re-read, never skip.
   */
  readFrom(cursor: { seq: number; offset: number }, limit = Infinity): SpoolItem[] {
    const items: SpoolItem[] = [];
    if (limit <= 0) return items;
    const it = walk(this.file, cursor);
    for (;;) {
      const step = it.next();
      if (step.done) {
        if (items.length === 0 && step.value.stop !== null) return this.readAfter(cursor.seq, limit);
        return items;
      }
      items.push(step.value);
      if (items.length >= limit) {
        it.return({ end: step.value.end, stop: null });
        return items;
      }
    }
  }

  /** The record whose line ends exactly at byte `end`, if that line is a valid record with seq `seq`. */
  recordEndingAt(end: number, seq: number): SpoolItem | null {
    const line = lineEndingAt(this.file, end);
    if (!line) return null;
    const item = itemOf(line, seq);
    return item.ok ? item.value : null;
  }

  /** Call onChange when the spool may have grown (fs.watch on the entry dir plus a slow safety poll). Returns a disposer. */
  watch(onChange: () => void, opts: WatchOptions = {}): () => void {
    return watchFiles(this.dir, [ENTRY_FILES.spool], onChange, opts);
  }
}

/**
 * The consumer's spool. `open` recovers first: the file is cut back to the last line that
 * is the next record with a valid sum, before anything is appended — appending after a
 * torn line would glue two records into one garbage line and lose both.
 */
export class Spool extends SpoolReader {
  private seq: number;
  private readonly entries: Map<string, SpooledAt>;
  private readonly replaced: Set<string>;

  private constructor(
    dir: string,
    private readonly clock: Clock,
    private readonly log: AppendLog,
    scan: SpoolScan,
  ) {
    super(dir);
    this.seq = scan.lastSeq;
    this.entries = scan.entries;
    this.replaced = scan.replacedSessions;
  }

  /** What recovery at open cut off the tail, or null. */
  get recovery(): SpoolRecovery | null {
    return this.log.cut;
  }

  static open(dir: string, opts: { clock: Clock }): Result<Spool> {
    const reader = new SpoolReader(dir);
    const opened = AppendLog.open({ file: reader.file, what: 'spool', error: (kind, message) => new SpoolWriteError(SPOOL_FAILURES[kind], message) }, () =>
      reader.scan(),
    );
    if (!opened.ok) return opened;
    return ok(new Spool(dir, opts.clock, opened.value.log, opened.value.valid));
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

  replacedSessions(): ReadonlySet<string> {
    return this.replaced;
  }

  /** Byte size of the valid spool. */
  end(): number {
    return this.log.size;
  }

  /**
   * Append records as one write and one fsync; returns them as written. A failed write or
   * fsync throws SpoolWriteError and leaves the spool unusable: a failed fsync is never
   * retried (the page cache may have dropped the data while reporting success later), the
   * consumer stops, and the next open recovers the tail. The Hub redelivers what was not acked.
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
      const unsealed =
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
            };
      const line = sealLine(unsealed);
      const parsed = parseSpoolRecord(JSON.parse(line));
      if (!parsed.ok) throw new TypeError(`refusing to spool a malformed record: ${parsed.reason}`);
      written.push(parsed.value);
      lines.push(line + '\n');
    }
    this.log.append(lines.join(''));
    this.seq = seq;
    for (const r of written) {
      if (r.type === 'transition') this.replaced.add(r.from_session);
      else if (!this.entries.has(r.entry.id)) this.entries.set(r.entry.id, { seq: r.seq, session: r.session });
    }
    return written;
  }

  close(): void {
    this.log.close();
  }
}

/**
 * How the reader labels an entry record: one that arrived under a session this entry has
 * since moved away from (an address_changed was spooled) is "possibly bounced" — its
 * sender may already have had the bounce — never fresh mail.
 */
export function entryStanding(
  record: SpoolEntryRecord,
  currentSession: string,
  replacedSessions: ReadonlySet<string>,
): 'fresh' | 'possibly_bounced' {
  return record.session !== currentSession && replacedSessions.has(record.session) ? 'possibly_bounced' : 'fresh';
}
