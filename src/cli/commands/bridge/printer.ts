import { validateEntry } from '../../../hub/contract/entry.js';
import { ENTRY_FILES, entryStanding, type Cursor, type SpoolItem, type StateEntry } from '../../../spool/index.js';
import { replaceFileAtomic } from '../../../util/fs-durable.js';
import { writeFlushed } from '../../io.js';
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
    private readonly out: NodeJS.WritableStream,
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
   * failed record. Each step is an atomic replace, which a killed reader cannot tear; the
   * last one is also made durable (fsync) before returning. Fsyncing every step would cost
   * two fsyncs per record for one thing only: after a power loss, fewer records printed
   * twice. A reverted cursor re-prints from the spool, which the consumer fsynced before
   * acking; it never skips.
   */
  async printAvailable(): Promise<void> {
    const items = this.entry.spoolReader().readFrom(this.cursor);
    if (items.length === 0) return;
    const session = this.entry.read('session');
    const current = session.state === 'ok' ? session.value.id : '';
    if (session.state === 'ok') for (const h of session.value.history) this.replaced.add(h.id);
    for (const { record } of items) if (record.type === 'transition') this.replaced.add(record.from_session);
    const cursorFile = this.entry.path(ENTRY_FILES.cursor);
    let stepped = false;
    try {
      for (const item of items) {
        if (this.stopRequested()) return;
        await writeFlushed(this.out, this.raw ? item.line + '\n' : this.summary(item, current));
        this.cursor = { seq: item.record.seq, offset: item.end };
        replaceFileAtomic(cursorFile, JSON.stringify(this.cursor) + '\n');
        stepped = true;
        this.printed += 1;
      }
    } finally {
      if (stepped) this.entry.writeCursor(this.cursor);
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
