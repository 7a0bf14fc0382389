import { chmodSync, lstatSync, readdirSync, unlinkSync, type Stats } from 'node:fs';
import path from 'node:path';
import type { Clock } from '../util/clock.js';
import { ensureDir, parseTempName, type Durability } from '../util/fs-durable.js';
import { type Result } from '../core/index.js';
import { readCursor, validateCursor, writeCursor, type Cursor, type CursorCheck } from './cursor.js';
import { Ledger } from './ledger.js';
import { acquireLock, type LockOptions, type LockResult } from './lock.js';
import { appendLog, type LogContext } from './log.js';
import { processExited } from './process.js';
import {
  STATE_FILES,
  parseConsumerRecord,
  parseConsumerSettings,
  parseIdentityRecord,
  parseReaderDisplaced,
  parseReaderRecord,
  parseReportedStop,
  parseSessionRecord,
  parseStandDownRequest,
  parseStoodDownRecord,
  parseRecordRead,
  readRecord,
  readRecordBytes,
  writeRecord,
  type ConsumerRecord,
  type ConsumerSettings,
  type IdentityRecord,
  type ReaderDisplaced,
  type ReaderRecord,
  type RecordRead,
  type ReportedStop,
  type SessionRecord,
  type StandDownRequest,
  type StoodDownRecord,
} from './records.js';
import { FileMemo } from './file-memo.js';
import { SeenJti } from './seen-jti.js';
import { sha256Hex } from '../util/sha256.js';
import { Spool, SpoolReader, type SegmentBounds } from './spool.js';

/** A group/world permission bit found on the entry and removed. */
export interface ModeRepair {
  path: string;
  /** Octal, e.g. '0644'. */
  was: string;
  now: string;
}

export const describeRepair = (r: ModeRepair): string => `tightened permissions on ${r.path} from ${r.was} to ${r.now} (group/others could access it)`;

export type StateDirOpen = Result<StateDir, { code: 'absent' | 'not_a_directory' | 'not_a_file' | 'foreign_owner' | 'io'; reason: string }>;
export type StateDirOpenFailure = Extract<StateDirOpen, { ok: false }>;

interface RecordKinds {
  identity: IdentityRecord;
  settings: ConsumerSettings;
  session: SessionRecord;
  consumer: ConsumerRecord;
  reader: ReaderRecord;
  standDownRequest: StandDownRequest;
  stoodDown: StoodDownRecord;
  reportedStop: ReportedStop;
  readerDisplaced: ReaderDisplaced;
}

const PARSERS: { [K in keyof RecordKinds]: (x: unknown) => Result<RecordKinds[K]> } = {
  identity: parseIdentityRecord,
  settings: parseConsumerSettings,
  session: parseSessionRecord,
  consumer: parseConsumerRecord,
  reader: parseReaderRecord,
  standDownRequest: parseStandDownRequest,
  stoodDown: parseStoodDownRecord,
  reportedStop: parseReportedStop,
  readerDisplaced: parseReaderDisplaced,
};

/**
 * reader.json describes a live reader and is rewritten on every run and heartbeat; after a
 * crash every process it could name is gone, and a record torn by a power loss reads as
 * unreadable, which is displaced once stale (or at once under a declared key). Its fsyncs
 * cost every run ~0.3 ms on an idle disk and several when the disk is busy (docs/performance.md).
 */
const LIVE_RECORDS: ReadonlySet<keyof RecordKinds> = new Set(['reader']);

/** One state dir directory, checked and ready; every piece of it bound to `dir`. */
export class StateDir {
  constructor(
    readonly dir: string,
    /** Permission repairs made while opening; the caller prints one line for each. */
    readonly repairs: readonly ModeRepair[],
    private readonly logContext: LogContext | null,
  ) {}

  path(name: string): string {
    return path.join(this.dir, name);
  }

  read<K extends keyof RecordKinds>(kind: K): RecordRead<RecordKinds[K]> {
    return readRecord(this.dir, STATE_FILES[kind], PARSERS[kind]);
  }

  /** A record read again only when its file changed (FileMemo); the caller closes it. */
  memo<K extends keyof RecordKinds>(kind: K): FileMemo<RecordRead<RecordKinds[K]>> {
    const file = this.path(STATE_FILES[kind]);
    return new FileMemo(file, (got) => parseRecordRead(file, got, PARSERS[kind]));
  }

  /** Durable unless the record is a live process's (`none`) or the caller says less is owed (`whole`: see SessionKeeper.renewed). */
  write<K extends keyof RecordKinds>(kind: K, value: RecordKinds[K], durability: Durability = LIVE_RECORDS.has(kind) ? 'none' : 'durable'): void {
    writeRecord(this.dir, STATE_FILES[kind], value, durability);
  }

  /**
   * settings.json and the settings digest: sha256 of the very bytes parsed. The consumer
   * records it in consumer.json; a reader compares it to know whether settings.json is
   * still the file the running consumer started with. Null when the file could not be read.
   */
  readSettings(): { read: RecordRead<ConsumerSettings>; digest: string | null } {
    const { read, bytes } = readRecordBytes(this.dir, STATE_FILES.settings, parseConsumerSettings);
    return { read, digest: bytes === null ? null : sha256Hex(bytes) };
  }

  /** settings.json written (by the consumer, under its lock) and its digest, as readSettings will see it. */
  writeSettings(value: ConsumerSettings): string {
    return sha256Hex(writeRecord(this.dir, STATE_FILES.settings, value));
  }

  readCursor(): Cursor {
    return readCursor(this.dir);
  }

  writeCursor(cursor: Cursor): void {
    writeCursor(this.dir, cursor);
  }

  /**
   * The cursor (`read`: as the caller just read it), validated against the spool (rewound,
   * never advanced, when it does not match). The file is read again after validating: if the
   * consumer rewound it in between (and may have appended since), validation runs again on
   * the new value.
   */
  checkedCursor(read: Cursor = this.readCursor()): CursorCheck {
    for (let before = read; ;) {
      const check = validateCursor(this.spoolReader(), before);
      const after = this.readCursor();
      if (after.seq === before.seq && after.offset === before.offset) return check;
      before = after;
    }
  }

  spoolReader(): SpoolReader {
    return new SpoolReader(this.dir);
  }

  /**
   * The writable spool (consumer only, under the lock), read from the segment holding `from`
   * + 1 (default: every segment; see Spool.open). Recovers the tail, then validates
   * the cursor and writes it back rewound if it points past what survived — before the
   * first append, because records appended where lost ones were would otherwise look
   * already printed (to the reader, and to the consumer's `ack acknowledged`).
   */
  openSpool(clock: Clock, opts: { from?: number; segment?: SegmentBounds } = {}): Result<Spool> {
    const opened = Spool.open(this.dir, { clock, ...opts });
    if (!opened.ok) return opened;
    const r = opened.value.recovery;
    if (r) this.log(`spool recovered: cut ${r.cutBytes} bytes at byte ${r.cutAt} (${r.reason})`);
    const check = validateCursor(opened.value, this.readCursor());
    if (check.rewound !== null) {
      this.writeCursor(check.cursor);
      this.log(`cursor ${check.rewound}`);
    }
    return opened;
  }

  /** The pending-ack ledger (consumer only, under the lock); a cut tail is logged. */
  openLedger(): Result<Ledger> {
    const opened = Ledger.open(this.dir);
    if (opened.ok && opened.value.recovery) {
      const r = opened.value.recovery;
      this.log(`ledger recovered: cut ${r.cutBytes} bytes at byte ${r.cutAt}`);
    }
    return opened;
  }

  loadSeenJti(): Result<SeenJti> {
    return SeenJti.load(this.dir);
  }

  lockConsumer(opts: LockOptions): Promise<LockResult> {
    return acquireLock(this.dir, STATE_FILES.consumerLock, opts);
  }

  /**
   * Remove the temp files atomic writes left here when their writer died between write and
   * rename; returns how many. Only the consumer calls this, holding the entry lock. A temp
   * file naming its writer's pid is removed once that pid is not a running process; an older
   * build's name carries no pid, so only an hour's silence shows its writer is gone.
   */
  sweepTemps(clock: Clock): number {
    let swept = 0;
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch {
      return 0;
    }
    for (const name of names) {
      const temp = parseTempName(name);
      if (!temp) continue;
      const p = this.path(name);
      try {
        const st = lstatSync(p);
        if (!st.isFile()) continue;
        const gone = temp.pid !== null ? processExited(temp.pid) : clock.now() - st.mtimeMs > OLD_TEMP_MAX_AGE_MS;
        if (!gone) continue;
        unlinkSync(p);
        swept++;
      } catch {
        /* renamed or removed meanwhile: nothing left to sweep */
      }
    }
    if (swept > 0) this.log(`swept ${swept} temp file${swept === 1 ? '' : 's'} left by crashed writes`);
    return swept;
  }

  /** One line in bridge.log; a no-op when the entry was opened without a log context. */
  log(text: string): void {
    if (this.logContext) appendLog(this.dir, text, this.logContext);
  }
}

const OLD_TEMP_MAX_AGE_MS = 60 * 60 * 1000;

/**
 * The entry's files (its lock is a directory). A directory in a record's place refuses every
 * write (a rename over it is EISDIR), and in the spool's, ledger's or log's every append: the
 * entry is refused at open, naming it and the fix, rather than a write failing later as a bug.
 */
const FILE_NAMES: ReadonlySet<string> = new Set(Object.values(STATE_FILES).filter((name) => name !== STATE_FILES.consumerLock));

const directoryInPlace = (p: string): StateDirOpenFailure => ({
  ok: false,
  code: 'not_a_file',
  reason: `${p} is a directory where oh-hai keeps a file; nothing in it is oh-hai's. Remove it (rm -r '${p}') and run again`,
});

const octal = (mode: number): string => '0' + (mode & 0o777).toString(8).padStart(3, '0');

/** Lock directories (proper-lockfile's mkdir) hold nothing and are made with the umask; leave them be. */
const isLockDir = (name: string): boolean => name.endsWith('.lock');

function statOrNull(p: string): Stats | null {
  try {
    return lstatSync(p);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw e;
  }
}

function foreign(p: string, st: Stats, uid: number, what: string): StateDirOpenFailure {
  return {
    ok: false,
    code: 'foreign_owner',
    reason:
      `${what} ${p} is owned by uid ${st.uid}, not by you (uid ${uid}); refusing to use it, because another user could read or alter this agent's mail. ` +
      `Remove it or give it back (chown -R ${uid} ${p}), or pass --state-home <absolute path> to use a root of your own`,
  };
}

/**
 * Open (and with `create`, make) a state dir: a 0700 directory of 0600 files. Every open
 * re-checks: group/world bits are removed and reported (and logged), an entry or file owned
 * by another user is refused.
 */
export function openStateDir(dir: string, opts: { create: boolean; log?: LogContext; uid?: number }): StateDirOpen {
  const uid = opts.uid ?? (typeof process.getuid === 'function' ? process.getuid() : null);
  const repairs: ModeRepair[] = [];
  try {
    if (opts.create) ensureDir(dir, 0o700);
    const st = statOrNull(dir);
    if (!st) return { ok: false, code: 'absent', reason: `there is no state entry at ${dir}` };
    if (!st.isDirectory()) {
      return {
        ok: false,
        code: 'not_a_directory',
        reason: `${dir} should be a state entry directory but is ${st.isSymbolicLink() ? 'a symbolic link' : 'not a directory'}; remove it and run again`,
      };
    }
    if (uid !== null && st.uid !== uid) return foreign(dir, st, uid, 'the state entry');
    if ((st.mode & 0o077) !== 0) {
      chmodSync(dir, 0o700);
      repairs.push({ path: dir, was: octal(st.mode), now: '0700' });
    }
    // Names, then the lstat each file needs anyway: Dirents make Node 20 compile its Dirent
    // code on every bridge run (docs/performance.md "Warm bridge (session 14)").
    for (const name of readdirSync(dir)) {
      if (isLockDir(name)) continue;
      const p = path.join(dir, name);
      const fst = statOrNull(p);
      if (!fst || !(fst.isFile() || fst.isDirectory())) continue;
      if (fst.isDirectory() && FILE_NAMES.has(name)) return directoryInPlace(p);
      if (uid !== null && fst.uid !== uid) return foreign(p, fst, uid, 'the file');
      if ((fst.mode & 0o077) !== 0) {
        const want = fst.isDirectory() ? 0o700 : 0o600;
        chmodSync(p, (fst.mode & 0o700) | want);
        repairs.push({ path: p, was: octal(fst.mode), now: octal((fst.mode & 0o700) | want) });
      }
    }
  } catch (e) {
    return { ok: false, code: 'io', reason: `cannot open the state entry ${dir}: ${(e as Error).message}` };
  }
  const stateDir = new StateDir(dir, repairs, opts.log ?? null);
  for (const r of repairs) stateDir.log(describeRepair(r));
  return { ok: true, value: stateDir };
}
