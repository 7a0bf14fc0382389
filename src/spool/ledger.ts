import path from 'node:path';
import { ok, type Result } from '../core/index.js';
import { AppendLog, type AppendLogFailure } from './append-log.js';
import { Fields } from '../util/shape.js';
import { openLine, readLines, sealLine } from './line.js';
import { STATE_FILES } from './records.js';

/**
 * The pending-ack ledger (`ledger.ndjson`): which spooled entries still owe the Hub an
 * `ack delivered`, and which an `ack acknowledged`. Append-only sealed lines, so a kill -9 at
 * any instant leaves a prefix of what was written (plus at most one torn line, cut at open).
 * Losing the tail is safe: an entry the ledger forgot is still unacknowledged at the Hub,
 * which redelivers it; the consumer's dedup then finds it in the spool and records it here
 * again (`recordSpooled` is idempotent), and its open records every spool record past the
 * settled mark that the ledger lacks.
 *
 * So `recordSpooled` is written without an fsync of its own: what it says (id, seq, session)
 * is the spool record's, fsynced before it, and the settled mark — what the open takes on
 * trust — is only written by fsynced lines (`acknowledged`, a compaction's replace), computed
 * while every unacknowledged entry was live here, and their fsync makes every earlier line
 * durable too. A power loss can take only `entry` lines after the last fsync, of entries past
 * the mark, and the open rebuilds them. The ack round's commit then costs seen-jti's one fsync
 * (docs/spool.md "One fsync per ack round"); `delivered` and `acknowledged` lines keep theirs.
 *
 * It also keeps the settled mark (docs/spool.md): a seq through which every spooled entry has
 * been acknowledged at the Hub (or reported unknown there, so never delivered again). The
 * Hub never hands such an entry over again, so the spool may forget its id for dedup and,
 * once printed, remove its record. Each `acknowledged` line carries the mark as it stands
 * after it; a compacted ledger starts with a `settled` line.
 */

export interface LedgerEntry {
  id: string;
  /** Its spool record's seq. */
  seq: number;
  /** The session it arrived under; null on the principal leg. */
  session: string | null;
  state: 'spooled' | 'delivered';
}

type LedgerOp =
  | { op: 'entry'; id: string; seq: number; session: string | null; state: LedgerEntry['state'] }
  | { op: 'delivered'; ids: string[] }
  | { op: 'acknowledged'; ids: string[]; settled?: number }
  | { op: 'settled'; through: number };

function parseOp(x: unknown): Result<LedgerOp> {
  const f = new Fields(x, 'ledger line');
  const op = f.oneOf('op', ['entry', 'delivered', 'acknowledged', 'settled']);
  switch (op) {
    case 'entry':
      return f.done<LedgerOp>({
        op,
        id: f.str('id', /./),
        seq: f.int('seq', 1),
        session: f.strOrNull('session'),
        state: f.oneOf('state', ['spooled', 'delivered']),
      });
    case 'settled':
      return f.done<LedgerOp>({ op, through: f.int('through') });
    case 'acknowledged':
      // Written before the settled mark existed: no `settled`.
      return f.done<LedgerOp>({ op, ids: f.strings('ids'), ...(f.raw('settled') === undefined ? {} : { settled: f.int('settled') }) });
    default:
      return f.done<LedgerOp>({ op: 'delivered', ids: f.strings('ids') });
  }
}

export class LedgerWriteError extends Error {
  constructor(
    readonly code: 'ledger_write_failed' | 'ledger_fsync_failed' | 'ledger_broken',
    message: string,
  ) {
    super(message);
    this.name = 'LedgerWriteError';
  }
}

export interface LedgerRecovery {
  cutAt: number;
  cutBytes: number;
}

const LEDGER_FAILURES: Record<AppendLogFailure, LedgerWriteError['code']> = {
  write_failed: 'ledger_write_failed',
  fsync_failed: 'ledger_fsync_failed',
  broken: 'ledger_broken',
};

/** The ledger's valid prefix: its ops in order, and where they end. */
function replay(file: string): { ops: LedgerOp[]; end: number; stop: string | null } {
  const ops: LedgerOp[] = [];
  let end = 0;
  for (const line of readLines(file)) {
    const opened = openLine(line.text);
    const op = opened.ok ? parseOp(opened.value) : opened;
    if (!op.ok) return { ops, end, stop: `byte ${line.start}: ${op.reason}` };
    ops.push(op.value);
    end = line.end;
  }
  return { ops, end, stop: null };
}

/** Rewrite the file once this many lines are dead and they outnumber the live entries 4 to 1. */
const COMPACT_MIN_DEAD = 1024;

export class Ledger {
  private readonly live = new Map<string, LedgerEntry>();
  private lines = 0;
  /** The settled mark as last written. */
  private written = 0;
  /** Every spooled record up to here is in the ledger or settled (what the consumer vouched for with `cover`). */
  private covered = 0;

  private constructor(private readonly log: AppendLog) {}

  get file(): string {
    return this.log.file;
  }

  /** What open cut off the tail (a torn or garbage line), or null. */
  get recovery(): LedgerRecovery | null {
    const cut = this.log.cut;
    return cut === null ? null : { cutAt: cut.cutAt, cutBytes: cut.cutBytes };
  }

  /** Open (consumer only, under the lock): replay the valid prefix, cut a torn or garbage tail. */
  static open(dir: string): Result<Ledger> {
    const opened = AppendLog.open(
      { file: path.join(dir, STATE_FILES.ledger), what: 'ledger', error: (kind, message) => new LedgerWriteError(LEDGER_FAILURES[kind], message) },
      replay,
    );
    if (!opened.ok) return opened;
    const ledger = new Ledger(opened.value.log);
    for (const op of opened.value.valid.ops) ledger.apply(op);
    ledger.lines = opened.value.valid.ops.length;
    ledger.covered = ledger.written;
    return ok(ledger);
  }

  private apply(op: LedgerOp): void {
    if (op.op === 'settled' || (op.op === 'acknowledged' && op.settled !== undefined)) {
      this.written = Math.max(this.written, op.op === 'settled' ? op.through : (op.settled ?? 0));
      if (op.op === 'settled') return;
    }
    if (op.op === 'entry') {
      if (!this.live.has(op.id)) this.live.set(op.id, { id: op.id, seq: op.seq, session: op.session, state: op.state });
      return;
    }
    for (const id of op.ids) {
      if (op.op === 'acknowledged') this.live.delete(id);
      else {
        const e = this.live.get(id);
        if (e) e.state = 'delivered';
      }
    }
  }

  private write(ops: readonly LedgerOp[], durable = true): void {
    this.log.ensureUsable();
    if (ops.length === 0) return;
    const text = ops.map((op) => sealLine(op) + '\n').join('');
    if (durable) this.log.append(text);
    else this.log.appendUnsynced(text);
    for (const op of ops) this.apply(op);
    this.lines += ops.length;
  }

  /**
   * Record entries as spooled (after the spool's fsync, before `ack delivered`). Ids already
   * here are left as they are. Written, not fsynced: the open rebuilds these from the spool (above).
   */
  recordSpooled(items: readonly { id: string; seq: number; session: string | null }[]): void {
    const fresh = new Map<string, LedgerOp>();
    for (const it of items) {
      if (!this.live.has(it.id) && !fresh.has(it.id)) fresh.set(it.id, { op: 'entry', id: it.id, seq: it.seq, session: it.session, state: 'spooled' });
    }
    this.write([...fresh.values()], false);
  }

  /** The Hub confirmed `ack delivered` for these. */
  markDelivered(ids: readonly string[]): void {
    const known = ids.filter((id) => this.live.get(id)?.state === 'spooled');
    if (known.length > 0) this.write([{ op: 'delivered', ids: known }]);
  }

  /** The Hub confirmed `ack acknowledged` for these: they leave the ledger. */
  acknowledge(ids: readonly string[]): void {
    const known = ids.filter((id) => this.live.has(id));
    if (known.length === 0) return;
    const gone = new Set(known);
    const settled = this.settledThrough(gone);
    this.write([{ op: 'acknowledged', ids: known, ...(settled > this.written ? { settled } : {}) }]);
    const dead = this.lines - this.live.size;
    if (dead >= COMPACT_MIN_DEAD && dead > 4 * this.live.size) this.compact();
  }

  /**
   * The consumer vouches that every spool record up to `seq` is in the ledger (or settled):
   * after it ledgered what it spooled, and at open once it recorded what a lost tail forgot.
   */
  cover(seq: number): void {
    if (seq > this.covered) this.covered = seq;
  }

  /** Every spooled entry up to this seq is acknowledged at the Hub or unknown there (0: none known). */
  settledThrough(without: ReadonlySet<string> = new Set()): number {
    let through = this.covered;
    for (const e of this.live.values()) if (e.seq <= through && !without.has(e.id)) through = e.seq - 1;
    return Math.max(through, 0);
  }

  /** Every entry still owed an ack, by seq. */
  pending(): LedgerEntry[] {
    return [...this.live.values()].map((e) => ({ ...e })).sort((a, b) => a.seq - b.seq);
  }

  /** Spooled entries whose `ack delivered` is not confirmed yet. */
  needsDelivered(): LedgerEntry[] {
    return this.pending().filter((e) => e.state === 'spooled');
  }

  /** Entries the (validated) cursor has passed: they owe `ack acknowledged`. */
  needsAcknowledged(cursorSeq: number): LedgerEntry[] {
    return this.pending().filter((e) => e.seq <= cursorSeq);
  }

  has(id: string): boolean {
    return this.live.has(id);
  }

  /** Rewrite the file as just the live entries (atomic replace), then keep appending to it. */
  compact(): void {
    const entries = this.pending();
    const settled = Math.max(this.written, this.settledThrough());
    const head = settled > 0 ? [sealLine({ op: 'settled', through: settled }) + '\n'] : [];
    this.log.replace([...head, ...entries.map((e) => sealLine({ op: 'entry', id: e.id, seq: e.seq, session: e.session, state: e.state }) + '\n')].join(''));
    this.written = settled;
    this.lines = entries.length + head.length;
  }

  close(): void {
    this.log.close();
  }
}
