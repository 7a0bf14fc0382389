import { EXIT, type Result } from '../core/index.js';
import { formatRetainPrinted, type RetainPrinted } from '../config/index.js';
import { DEFAULT_SEGMENT, STATE_FILES, Ledger, SeenJti, type SegmentBounds, type Spool, type StateDir } from '../spool/index.js';
import type { Clock } from '../util/clock.js';
import { stop, type Stop } from './stops.js';

/** The files only the lock holder writes, opened (and their tails recovered) together. */
export interface DrainState {
  spool: Spool;
  ledger: Ledger;
  seen: SeenJti;
  /**
   * After an ack round: remove the spool segments that are printed, settled at the Hub and
   * past retain_printed. Returns what to log (never throws: only disk space is at stake).
   */
  compact(nowMs: number, replayWindowSeconds: number): string[];
  close(): void;
}

/**
 * Segments a tenth of the retained count (16 to 1,000 records): removal goes a segment at a
 * time, so this keeps what stays within 10 % of the bound while a segment stays small enough
 * that a start reads little of it (docs/spool.md).
 */
export const segmentBounds = (retain: RetainPrinted): SegmentBounds => ({
  records: Math.min(DEFAULT_SEGMENT.records, Math.max(16, Math.floor(retain.records / 10))),
  bytes: DEFAULT_SEGMENT.bytes,
});

const DAY_MS = 86_400_000;

function compactor(stateDir: StateDir, spool: Spool, ledger: Ledger, retain: RetainPrinted): DrainState['compact'] {
  return (nowMs, replayWindowSeconds) => {
    const settled = ledger.settledThrough();
    if (!spool.compactable(settled)) return [];
    const through = Math.min(settled, stateDir.checkedCursor().cursor.seq);
    // A delivery sent before the Hub took an acknowledgement passes the freshness check for at
    // most a window either side of its t: twice the window and a margin, then the id may go.
    const holdMs = (2 * replayWindowSeconds + 60) * 1000;
    const r = spool.compact({ through, retain: { records: retain.records, maxAgeMs: retain.days * DAY_MS, bytes: retain.bytes }, nowMs, holdMs });
    const lines: string[] = [];
    if (r.dropped.length > 0) {
      const bytes = r.dropped.reduce((n, d) => n + d.bytes, 0);
      lines.push(
        `spool: removed ${r.dropped.length} segment${r.dropped.length === 1 ? '' : 's'} (seq ${r.dropped[0]!.first}\u2013${r.dropped.at(-1)!.last}, ${bytes} bytes): ` +
          `printed, acknowledged at the Hub and past retain_printed (${formatRetainPrinted(retain)})`,
      );
    }
    if (r.failed !== null) lines.push(`spool: ${r.failed}; the segment stays until a later round`);
    return lines;
  };
}

/** What the drain state is opened with: the leg (for the ledger's sessions) and `[bridge] retain_printed`. */
export interface DrainStateOptions {
  leg: 'session' | 'principal';
  retain: RetainPrinted;
}

/**
 * Open the ledger first: its settled mark and the cursor say where the spool must be read
 * from (docs/spool.md). Then every entry the spool holds past the mark that the ledger does
 * not — spooled just before a kill, never ledgered, so never acked — is recorded from its
 * spool record, as a redelivery would have done: the Hub may never redeliver it (its session
 * replaced, its message expired), and a record owed no ack would hold the mark back for good.
 */
export function openDrainState(stateDir: StateDir, clock: Clock, log: (text: string) => void, opts: DrainStateOptions): Result<DrainState, { stop: Stop }> {
  const ledger = Ledger.open(stateDir.dir);
  if (!ledger.ok) return { ok: false, stop: stop(EXIT.internal, 'spool_write_failed', ledger.reason) };
  if (ledger.value.recovery) log(`ledger recovered: cut ${ledger.value.recovery.cutBytes} bytes at byte ${ledger.value.recovery.cutAt}`);
  const settled = ledger.value.settledThrough();
  const spool = stateDir.openSpool(clock, { from: Math.min(settled, stateDir.readCursor().seq), segment: segmentBounds(opts.retain) });
  if (!spool.ok) {
    ledger.value.close();
    return { ok: false, stop: stop(EXIT.internal, 'spool_write_failed', spool.reason) };
  }
  const unledgered = spool.value
    .entriesAfter(settled)
    .filter((e) => !ledger.value.has(e.id))
    .map((e) => ({ id: e.id, seq: e.seq, session: opts.leg === 'principal' ? null : e.session }));
  try {
    ledger.value.recordSpooled(unledgered);
  } catch (e) {
    spool.value.close();
    ledger.value.close();
    return { ok: false, stop: stop(EXIT.internal, 'spool_write_failed', `${(e as Error).message}; not retried`) };
  }
  if (unledgered.length > 0)
    log(
      `ledger: recorded ${unledgered.length} spooled entr${unledgered.length === 1 ? 'y' : 'ies'} it had lost (spooled just before the last stop); they are acked from their spool records`,
    );
  ledger.value.cover(spool.value.lastSeq());
  const seen = SeenJti.load(stateDir.dir);
  if (!seen.ok) {
    spool.value.close();
    ledger.value.close();
    return {
      ok: false,
      stop: stop(
        EXIT.internal,
        'state_unreadable',
        `${seen.reason}; without it a replayed delivery could pass, so the consumer will not start. Remove ${stateDir.path(STATE_FILES.seenJti)} once you have checked nothing else in the entry is damaged`,
      ),
    };
  }
  if (seen.value.recovery) log(`seen-jti set recovered: cut ${seen.value.recovery.cutBytes} bytes at byte ${seen.value.recovery.cutAt}`);
  return {
    ok: true,
    value: {
      spool: spool.value,
      ledger: ledger.value,
      seen: seen.value,
      compact: compactor(stateDir, spool.value, ledger.value, opts.retain),
      close: () => {
        spool.value.close();
        ledger.value.close();
        seen.value.close();
      },
    },
  };
}
