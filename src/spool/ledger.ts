import { closeSync, fstatSync, fsyncSync, ftruncateSync, openSync, writeSync } from 'node:fs';
import path from 'node:path';
import { fsyncDir, writeFileAtomic } from '../util/fs-durable.js';
import { fail, ok, type Result } from '../util/result.js';
import { Fields } from './fields.js';
import { openLine, readLines, sealLine } from './line.js';
import { ENTRY_FILES } from './records.js';

/**
 * The pending-ack ledger (`ledger.ndjson`): which spooled entries still owe the Hub an
 * `ack delivered`, and which an `ack acknowledged`. Append-only sealed lines, fsynced per
 * call, so a kill -9 at any instant leaves a prefix of what was written (plus at most one
 * torn line, cut at open). Losing the tail is safe: an entry the ledger forgot is still
 * unacknowledged at the Hub, which redelivers it; the consumer's dedup then finds it in
 * the spool and records it here again (`recordSpooled` is idempotent).
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
  | { op: 'delivered' | 'acknowledged'; ids: string[] };

function parseOp(x: unknown): Result<LedgerOp> {
  const f = new Fields(x, 'ledger line');
  const op = f.oneOf('op', ['entry', 'delivered', 'acknowledged']);
  if (op === 'entry') {
    return f.done<LedgerOp>({ op, id: f.str('id', /./), seq: f.int('seq', 1), session: f.strOrNull('session'), state: f.oneOf('state', ['spooled', 'delivered']) });
  }
  return f.done<LedgerOp>({ op, ids: f.strings('ids') });
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

/** Rewrite the file once this many lines are dead and they outnumber the live entries 4 to 1. */
const COMPACT_MIN_DEAD = 1024;

export class Ledger {
  private readonly live = new Map<string, LedgerEntry>();
  private lines = 0;
  private broken: string | null = null;

  private constructor(
    readonly file: string,
    private fd: number | null,
    readonly recovery: LedgerRecovery | null,
  ) {}

  /** Open (consumer only, under the lock): replay the valid prefix, cut a torn or garbage tail. */
  static open(dir: string): Result<Ledger> {
    const file = path.join(dir, ENTRY_FILES.ledger);
    let fd: number;
    try {
      fd = openSync(file, 'a', 0o600);
    } catch (e) {
      return fail(`cannot open the ledger ${file}: ${(e as Error).message}`);
    }
    try {
      fsyncDir(dir);
      const ops: LedgerOp[] = [];
      let end = 0;
      for (const line of readLines(file)) {
        const opened = openLine(line.text);
        const op = opened.ok ? parseOp(opened.value) : opened;
        if (!op.ok) break;
        ops.push(op.value);
        end = line.end;
      }
      const size = fstatSync(fd).size;
      let recovery: LedgerRecovery | null = null;
      if (size > end) {
        ftruncateSync(fd, end);
        fsyncSync(fd);
        recovery = { cutAt: end, cutBytes: size - end };
      }
      const ledger = new Ledger(file, fd, recovery);
      for (const op of ops) ledger.apply(op);
      ledger.lines = ops.length;
      return ok(ledger);
    } catch (e) {
      closeSync(fd);
      return fail(`cannot recover the ledger ${file}: ${(e as Error).message}`);
    }
  }

  private apply(op: LedgerOp): void {
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

  private write(ops: readonly LedgerOp[]): void {
    if (this.broken !== null) throw new LedgerWriteError('ledger_broken', `the ledger ${this.file} failed earlier (${this.broken}); reopen it`);
    if (this.fd === null) throw new LedgerWriteError('ledger_broken', `the ledger ${this.file} is closed`);
    if (ops.length === 0) return;
    const buf = Buffer.from(ops.map((op) => sealLine(op) + '\n').join(''), 'utf8');
    try {
      let off = 0;
      while (off < buf.length) off += writeSync(this.fd, buf, off, buf.length - off);
    } catch (e) {
      this.broken = `write: ${(e as Error).message}`;
      throw new LedgerWriteError('ledger_write_failed', `writing the ledger ${this.file} failed: ${(e as Error).message}`);
    }
    try {
      fsyncSync(this.fd);
    } catch (e) {
      this.broken = `fsync: ${(e as Error).message}`;
      throw new LedgerWriteError('ledger_fsync_failed', `fsync of the ledger ${this.file} failed: ${(e as Error).message}; not retried`);
    }
    for (const op of ops) this.apply(op);
    this.lines += ops.length;
  }

  /** Record entries as spooled (after the spool's fsync, before `ack delivered`). Ids already here are left as they are. */
  recordSpooled(items: readonly { id: string; seq: number; session: string | null }[]): void {
    const fresh = new Map<string, LedgerOp>();
    for (const it of items) {
      if (!this.live.has(it.id) && !fresh.has(it.id)) fresh.set(it.id, { op: 'entry', id: it.id, seq: it.seq, session: it.session, state: 'spooled' });
    }
    this.write([...fresh.values()]);
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
    this.write([{ op: 'acknowledged', ids: known }]);
    const dead = this.lines - this.live.size;
    if (dead >= COMPACT_MIN_DEAD && dead > 4 * this.live.size) this.compact();
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
    if (this.broken !== null || this.fd === null) throw new LedgerWriteError('ledger_broken', `the ledger ${this.file} cannot be compacted now`);
    const entries = this.pending();
    const text = entries.map((e) => sealLine({ op: 'entry', id: e.id, seq: e.seq, session: e.session, state: e.state }) + '\n').join('');
    try {
      writeFileAtomic(this.file, text);
    } catch (e) {
      this.broken = `compact: ${(e as Error).message}`;
      throw new LedgerWriteError('ledger_write_failed', `compacting the ledger ${this.file} failed: ${(e as Error).message}`);
    }
    closeSync(this.fd);
    this.fd = null;
    try {
      this.fd = openSync(this.file, 'a', 0o600);
    } catch (e) {
      this.broken = `reopen after compaction: ${(e as Error).message}`;
      throw new LedgerWriteError('ledger_write_failed', `reopening the ledger ${this.file} failed: ${(e as Error).message}`);
    }
    this.lines = entries.length;
  }

  close(): void {
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
  }
}
