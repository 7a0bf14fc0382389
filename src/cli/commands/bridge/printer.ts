import { validateEntry } from '../../../hub/contract/entry.js';
import { escapeUnsafe } from '../../../util/escape.js';
import { ENTRY_FILES, entryStanding, stoodDownSessions, type Cursor, type SpoolItem, type StateEntry } from '../../../spool/index.js';
import { writeFlushed, type Output } from '../../io.js';
import { CursorFile } from './cursor-file.js';
import { entrySummary, plain, transitionSummary } from './summary.js';

/**
 * Prints every record after the cursor and advances the cursor one record at a time,
 * only after stdout has taken the bytes — so a reader killed mid-record prints that
 * record again next time rather than losing it (DESIGN.md "The safety property").
 */
export class Printer {
  private cursor: Cursor;
  /** Sessions this entry moved away from: entries that arrived under them may have bounced. */
  private readonly replaced = new Set<string>();
  printed = 0;

  constructor(
    private readonly entry: StateEntry,
    private readonly out: Output,
    private readonly raw: boolean,
    /** Asked before each record: a stop request lets the record in flight finish, and no more. */
    private readonly stopRequested: () => boolean,
  ) {
    const checked = entry.checkedCursor();
    if (checked.rewound) entry.log(`reader: ${checked.rewound}`);
    this.cursor = checked.cursor;
  }

  /** Something after the cursor is in the spool. */
  pending(): boolean {
    return this.entry.spoolReader().readFrom(this.cursor, 1).length > 0;
  }

  /**
   * Print what is there now. Rejects when stdout fails; the cursor then stays before the
   * failed record. Each step is written in place; the last is made durable before returning
   * (see CursorFile for why not a rename and an fsync per record).
   */
  async printAvailable(): Promise<void> {
    const items = this.entry.spoolReader().readFrom(this.cursor);
    if (items.length === 0) return;
    // Stood-down sessions first: a new session takes them into its history before they are cleared.
    for (const s of stoodDownSessions(this.entry)) this.replaced.add(s.id);
    const session = this.entry.read('session');
    const current = session.state === 'ok' ? session.value.id : '';
    if (session.state === 'ok') for (const h of session.value.history) this.replaced.add(h.id);
    for (const { record } of items) if (record.type === 'transition') this.replaced.add(record.from_session);
    const cursorFile = new CursorFile(this.entry.path(ENTRY_FILES.cursor));
    try {
      for (const item of items) {
        if (this.stopRequested()) return;
        await writeFlushed(this.out, this.raw ? escapeUnsafe(item.line) + '\n' : this.summary(item, current));
        this.cursor = { seq: item.record.seq, offset: item.end };
        cursorFile.step(this.cursor);
        this.printed += 1;
      }
    } finally {
      cursorFile.close();
    }
  }

  private summary(item: SpoolItem, current: string): string {
    const r = item.record;
    if (r.type === 'transition') return transitionSummary(r);
    const entry = validateEntry(r.entry);
    if (!entry.ok) return `[mail ${r.seq}] entry ${plain(r.entry.id)} could not be read as an MA2H entry (${entry.reason}); --raw prints it verbatim\n`;
    const bounced = entryStanding(r, current, this.replaced) === 'possibly_bounced' ? { session: r.session } : null;
    return entrySummary({ seq: r.seq, entry: entry.value, possiblyBounced: bounced });
  }
}
