import { closeSync, fstatSync, fsyncSync, ftruncateSync, renameSync, writeSync } from 'node:fs';
import path from 'node:path';
import { fsyncDir, writeFileAtomic } from '../util/fs-durable.js';
import { stamp, TRACE } from '../util/trace.js';
import { fail, ok, type Result } from '../core/index.js';
import { identityOf, openStateFile, replacedUnder, type FileIdentity } from './safe-open.js';

/**
 * One durable append-only file of the state dir (the spool's segments, the ledger): the
 * one place that opens for append, cuts a torn tail, writes and fsyncs, and latches broken.
 *
 * - Open (by its one writer, under the entry lock): the owner's `validEnd` walks the file
 *   and says where its last valid line ends; anything after it — a torn write, garbage — is
 *   cut before the first append, because appending after a torn line would glue two lines
 *   into one garbage line and lose both.
 * - Append: one write (looped until every byte is taken) and one fsync per call; or, for a
 *   line the owner can rebuild from another file that is durable already, the write alone
 *   (`appendUnsynced`): the next append's fsync makes it durable with the rest, since an fsync
 *   covers every byte written to the file before it.
 * - A failed write or fsync latches the log broken and is never retried: after a failed
 *   fsync the page cache may have dropped the data while a later fsync reports success
 *   (fsyncgate). The owner stops; the next open recovers the tail.
 */

/** What recovery at open cut off the tail. */
export interface TailCut {
  cutAt: number;
  cutBytes: number;
  reason: string;
}

export type AppendLogFailure = 'write_failed' | 'fsync_failed' | 'broken';

export interface AppendLogSpec {
  file: string;
  /** How messages name it: 'spool', 'ledger'. */
  what: string;
  /** The coded error the owner throws for a failure (its callers catch their own class). */
  error(kind: AppendLogFailure, message: string): Error;
}

/** Where the valid lines of a file end, and why the walk stopped before the file's end (null: a torn last line, or none). */
export interface ValidEnd {
  end: number;
  stop: string | null;
}

export class AppendLog {
  private fd: number | null;
  /** The open file's identity, read once per open: an fd's device and inode never change, so each append stats only the path. */
  private identity: FileIdentity;
  private bytes: number;
  private brokenBy: string | null = null;

  private constructor(
    private readonly spec: AppendLogSpec,
    fd: number,
    bytes: number,
    /** What open cut off, or null when the file was whole. */
    readonly cut: TailCut | null,
  ) {
    this.fd = fd;
    this.identity = identityOf(fd);
    this.bytes = bytes;
  }

  get file(): string {
    return this.spec.file;
  }

  /** Bytes of valid lines: the file's size since open. */
  get size(): number {
    return this.bytes;
  }

  /**
   * Open for append (0600, created when absent, its directory fsynced), recovering the tail
   * first. `validEnd`'s whole answer comes back too: the walk that finds the end is the
   * owner's replay of the file.
   */
  static open<S extends ValidEnd>(spec: AppendLogSpec, validEnd: (file: string) => S): Result<{ log: AppendLog; valid: S }> {
    let fd: number;
    try {
      fd = openStateFile(spec.file, 'append');
    } catch (e) {
      return fail(`cannot open the ${spec.what} ${spec.file}: ${(e as Error).message}`);
    }
    try {
      fsyncDir(path.dirname(spec.file));
      const valid = validEnd(spec.file);
      const size = fstatSync(fd).size;
      let cut: TailCut | null = null;
      if (size > valid.end) {
        cut = { cutAt: valid.end, cutBytes: size - valid.end, reason: valid.stop ?? `byte ${valid.end}: a line without its newline (torn write)` };
        ftruncateSync(fd, valid.end);
        fsyncSync(fd);
      }
      return ok({ log: new AppendLog(spec, fd, valid.end, cut), valid });
    } catch (e) {
      closeSync(fd);
      return fail(`cannot recover the ${spec.what} ${spec.file}: ${(e as Error).message}`);
    }
  }

  /** Throws the owner's 'broken' error unless an append could be attempted now. */
  ensureUsable(): number {
    if (this.brokenBy !== null) throw this.spec.error('broken', `the ${this.spec.what} ${this.spec.file} failed earlier (${this.brokenBy}); reopen it`);
    if (this.fd === null) throw this.spec.error('broken', `the ${this.spec.what} ${this.spec.file} is closed`);
    return this.fd;
  }

  /** One write, one fsync. On failure the log is broken for good and the owner's error is thrown. */
  append(data: string | Buffer): void {
    const fd = this.write(data);
    if (fd === null) return;
    try {
      fsyncSync(fd);
    } catch (e) {
      this.brokenBy = `fsync: ${(e as Error).message}`;
      throw this.spec.error('fsync_failed', `fsync of the ${this.spec.what} ${this.spec.file} failed: ${(e as Error).message}; not retried`);
    }
  }

  /**
   * One write and no fsync, for a line a power loss may take because the owner rebuilds it at
   * open from a file that was durable before the line was written (the ledger's `entry` lines,
   * from the spool). A kill leaves it in the page cache; the next `append` makes it durable.
   */
  appendUnsynced(data: string | Buffer): void {
    this.write(data);
  }

  /** Every byte of `data` written at the end; the fd to fsync, or null when there was nothing to write. */
  private write(data: string | Buffer): number | null {
    const fd = this.ensureUsable();
    const buf = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
    if (buf.length === 0) return null;
    // A file swapped in under this writer (by hand, by another program) would take nothing we
    // append, and the next open would never see it: stop instead (never retried, like a failed write).
    const replaced = replacedUnder(this.identity, this.spec.file);
    if (replaced !== null) {
      this.brokenBy = replaced;
      throw this.spec.error('write_failed', `the ${this.spec.what}: ${replaced}`);
    }
    try {
      let off = 0;
      while (off < buf.length) off += writeSync(fd, buf, off, buf.length - off);
      if (TRACE) stamp('spool.written');
    } catch (e) {
      this.brokenBy = `write: ${(e as Error).message}`;
      throw this.spec.error('write_failed', `writing to the ${this.spec.what} ${this.spec.file} failed: ${(e as Error).message}`);
    }
    this.bytes += buf.length;
    return fd;
  }

  /**
   * Replace the whole file with `text` (temp, fsync, rename, fsync dir: a crash leaves the
   * old file or the new one), then keep appending to the new one. For compaction.
   */
  replace(text: string): void {
    const fd = this.ensureUsable();
    try {
      writeFileAtomic(this.spec.file, text);
    } catch (e) {
      this.brokenBy = `compact: ${(e as Error).message}`;
      throw this.spec.error('write_failed', `compacting the ${this.spec.what} ${this.spec.file} failed: ${(e as Error).message}`);
    }
    closeSync(fd);
    this.fd = null;
    try {
      this.fd = openStateFile(this.spec.file, 'append');
      this.identity = identityOf(this.fd);
    } catch (e) {
      this.brokenBy = `reopen after compaction: ${(e as Error).message}`;
      throw this.spec.error('write_failed', `reopening the ${this.spec.what} ${this.spec.file} failed: ${(e as Error).message}`);
    }
    this.bytes = Buffer.byteLength(text, 'utf8');
  }

  /**
   * Seal the file under another name and go on with a new, empty one at the old path: the
   * rename is atomic and fsynced in the directory before the new file is created, so a kill
   * between the two leaves the sealed file and no current one (the next open creates it).
   */
  seal(sealedPath: string): void {
    const fd = this.ensureUsable();
    closeSync(fd);
    this.fd = null;
    try {
      renameSync(this.spec.file, sealedPath);
      fsyncDir(path.dirname(this.spec.file));
      this.fd = openStateFile(this.spec.file, 'append');
      this.identity = identityOf(this.fd);
      fsyncDir(path.dirname(this.spec.file));
    } catch (e) {
      this.brokenBy = `seal: ${(e as Error).message}`;
      throw this.spec.error('write_failed', `sealing the ${this.spec.what} ${this.spec.file} as ${path.basename(sealedPath)} failed: ${(e as Error).message}`);
    }
    this.bytes = 0;
  }

  close(): void {
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
  }
}
