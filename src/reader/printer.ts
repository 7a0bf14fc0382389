import { validateEntry } from '../hub/contract/entry.js';
import { escapeUnsafe } from '../util/escape.js';
import {
  CursorWriter,
  entryStanding,
  writeCursor,
  type Cursor,
  type FileMemo,
  type RecordRead,
  type SessionRecord,
  type SpoolItem,
  type SpoolReader,
  type StateDir,
  type StoodDownRecord,
} from '../spool/index.js';
import type { Output } from '../util/output.js';
import { writeFlushedNow } from '../util/output.js';
import { hop, stamped, TRACE, type Instant } from '../util/trace.js';
import { rehearseWake } from './rehearse.js';
import { entrySummary, type Labels, NO_LABELS, plain, transitionSummary } from './summary.js';

/** A record a collecting reader took: what the bridge would have printed for it, not yet past the cursor. */
export interface TakenRecord {
  item: SpoolItem;
  /** The bridge's summary line for it (with its newline). */
  text: string;
  /** It arrived under a session this entry has since replaced: printed as POSSIBLY BOUNCED. */
  possiblyBounced: boolean;
}

/**
 * Where a reader's records go: printed on stdout (the bridge), or collected (the MCP
 * server's oh_hai_read), whose caller hands them on and only then calls `commit`.
 */
export class Collected {
  readonly taken: TakenRecord[] = [];
  private cursor: Cursor | null = null;
  private dir: string | null = null;

  /** Set by the printer: the cursor after the last record taken, and the state dir it belongs to. */
  took(record: TakenRecord, cursor: Cursor, dir: string): void {
    this.taken.push(record);
    this.cursor = cursor;
    this.dir = dir;
  }

  /** Advance the cursor past everything taken — once it has been handed on, never before — and make it durable. */
  commit(): void {
    if (this.cursor === null || this.dir === null) return;
    writeCursor(this.dir, this.cursor);
    this.cursor = null;
  }
}

/**
 * Prints every record after the cursor and advances the cursor one record at a time,
 * only after stdout has taken the bytes — so a reader killed mid-record prints that
 * record again next time rather than losing it (DESIGN.md "The safety property"). With a
 * `Collected`, it takes the records instead and leaves the cursor to `Collected.commit`.
 */
export class Printer {
  private cursor: Cursor;
  /** Sessions this entry moved away from: entries that arrived under them may have bounced. */
  private readonly replaced = new Set<string>();
  /** session.json and stood-down.json: read before a wait, and on a wake again only when they changed. */
  private readonly session: FileMemo<RecordRead<SessionRecord>>;
  private readonly stoodDown: FileMemo<RecordRead<StoodDownRecord>>;
  /** Made once, ahead of any wake: each derives its file's path (a wake's first path.join cost ~0.07 ms). */
  private readonly spool: SpoolReader;
  private readonly cursorFile: CursorWriter;
  printed = 0;
  /** Of those, entries: mail, as opposed to news about the address (a transition). */
  mail = 0;

  constructor(
    private readonly stateDir: StateDir,
    private readonly out: Output,
    private readonly raw: boolean,
    /** Asked before each record: a stop request lets the record in flight finish, and no more. */
    private readonly stopRequested: () => boolean,
    private readonly collected: Collected | null = null,
    /** Senders' labels from the directory cache: asked once per batch a summary is written for, never fetched. */
    private readonly senderLabels: () => Labels = () => NO_LABELS,
  ) {
    const checked = stateDir.checkedCursor();
    if (checked.rewound) stateDir.log(`reader: ${checked.rewound}`);
    this.cursor = checked.cursor;
    this.session = stateDir.memo('session');
    this.stoodDown = stateDir.memo('stoodDown');
    this.spool = stateDir.spoolReader();
    this.cursorFile = new CursorWriter(stateDir.dir);
  }

  /** The records after the cursor, read once: a wake that finds some hands them to `printAvailable`. */
  available(): SpoolItem[] {
    return this.spool.readFrom(this.cursor);
  }

  /**
   * Read what labels a line (the session, the stood-down sessions, the senders' labels) and
   * open the spool's current segment ahead of a wait: a wake then only checks that those
   * files did not change and reads the new records with one pread (SpoolReader.hold), and
   * its first line costs no more than reading the records (docs/performance.md "Push
   * latency"). With `rehearse`, a wait that will sleep also runs the wake's read and line
   * on a made-up record (rehearse.ts).
   */
  prepare(opts: { rehearse: boolean }): void {
    this.spool.hold();
    const current = this.standing();
    const labels = this.raw ? NO_LABELS : this.senderLabels();
    if (!opts.rehearse) return;
    rehearseWake({
      // What printAvailable checks before its lines. Run once only, the checks' lstats (Node's BigIntStats) ran
      // interpreted and without feedback on the wake: ~12 % of its CPU samples (docs/performance.md, session 16).
      labels: () => {
        this.standing();
        if (!this.raw) this.senderLabels();
      },
      read: (bytes) => this.spool.rehearseRead(bytes),
      line: (item) => this.lineFor(item, current, labels),
    });
  }

  /** Let go of the files held to see whether they changed, and of the spool held for the wake. */
  close(): void {
    this.session.close();
    this.stoodDown.close();
    this.spool.release();
  }

  /** The current session's id ('' when none is recorded), with every session it replaced now in `replaced`. */
  private standing(): string {
    // Stood-down sessions first: a new session takes them into its history before they are cleared.
    const stood = this.stoodDown.get();
    if (stood.state === 'ok') for (const s of stood.value.sessions) this.replaced.add(s.id);
    const session = this.session.get();
    if (session.state !== 'ok') return '';
    for (const h of session.value.history) this.replaced.add(h.id);
    return session.value.id;
  }

  /**
   * Print what is there now (or `items`, the records `available` just read). Rejects when
   * stdout fails; the cursor then stays before the failed record. Each step is written in
   * place; the last is made durable before returning (see CursorWriter for why not an atomic
   * replace per record).
   */
  async printAvailable(items: readonly SpoolItem[] = this.available()): Promise<void> {
    if (items.length === 0) return;
    if (TRACE) traceItems(items, 'reader.woken', stamped('reader.woken'));
    if (TRACE) traceItems(items, 'reader.read');
    const current = this.standing();
    for (const { record } of items) if (record.type === 'transition') this.replaced.add(record.from_session);
    const labels = this.raw ? NO_LABELS : this.senderLabels();
    if (TRACE) traceItems(items, 'reader.prepared');
    if (this.collected) {
      for (const item of items) {
        if (this.stopRequested()) return;
        this.cursor = { seq: item.record.seq, offset: item.end };
        this.collected.took({ item, ...this.summary(item, current, labels) }, this.cursor, this.stateDir.dir);
        this.count(item);
      }
      return;
    }
    const cursorFile = this.cursorFile;
    try {
      for (const item of items) {
        if (this.stopRequested()) return;
        const text = this.lineFor(item, current, labels);
        if (TRACE) traceItems([item], 'reader.summarised');
        const flushed = writeFlushedNow(this.out, text);
        // The bridge's stdout (FdOutput) has made its write(2) by now: null when there is nothing to wait for.
        if (TRACE) traceItems([item], 'reader.printed');
        if (flushed !== null) await flushed;
        this.cursor = { seq: item.record.seq, offset: item.end };
        cursorFile.step(this.cursor);
        this.count(item);
      }
    } finally {
      cursorFile.commit();
    }
  }

  private count(item: SpoolItem): void {
    this.printed += 1;
    if (item.record.type === 'entry') this.mail += 1;
  }

  /** What the bridge prints for a record: its summary line, or under --raw the spool line itself. */
  private lineFor(item: SpoolItem, current: string, labels: Labels): string {
    return this.raw ? escapeUnsafe(item.line) + '\n' : this.summary(item, current, labels).text;
  }

  private summary(item: SpoolItem, current: string, labels: Labels): { text: string; possiblyBounced: boolean } {
    const r = item.record;
    if (r.type === 'transition') return { text: transitionSummary(r), possiblyBounced: false };
    const entry = validateEntry(r.entry);
    if (!entry.ok)
      return {
        text: `[mail ${r.seq}] entry ${plain(r.entry.id)} could not be read as an MA2H entry (${entry.reason}); --raw prints it verbatim\n`,
        possiblyBounced: false,
      };
    const bounced = entryStanding(r, current, this.replaced) === 'possibly_bounced' ? { session: r.session } : null;
    return { text: entrySummary({ seq: r.seq, entry: entry.value, possiblyBounced: bounced }, labels), possiblyBounced: bounced !== null };
  }
}

/** The trace's hop for each entry record (bench/bridge-latency.mjs --trace). */
function traceItems(items: readonly SpoolItem[], name: string, at?: Instant): void {
  for (const { record } of items) if (record.type === 'entry') hop(name, (record.entry as { message_id?: unknown }).message_id, at);
}
