import { closeSync, fstatSync, lstatSync, type BigIntStats } from 'node:fs';
import { countVersionCheck } from './io-counts.js';
import type { FileRead } from './records.js';
import { openStateFile, readToEnd } from './safe-open.js';

/**
 * A state file read once, then again only when it changed: each `get` costs one lstat (which
 * throws nothing for an absent file) instead of an open, a read and a parse. A waiting
 * reader reads what labels its lines (session.json, stood-down.json, the directory cache)
 * before it sleeps, and its wake only checks them (docs/performance.md "Push latency").
 *
 * The version read is held open, so no file that replaces it can carry its inode number: an
 * atomic replace — how every one of these files is written — is seen however close together
 * two replaces come and whatever the clock's granularity. A change in place is seen by its
 * size, mtime or ctime. A read that failed is not kept: the next `get` reads again, as before.
 * `close` lets go of the held version.
 */
export class FileMemo<T> {
  private held: { fd: number; version: BigIntStats } | null = null;
  /** What `load` made of the version held (or of the file's absence when nothing is held). */
  private kept: { value: T } | null = null;

  constructor(
    readonly file: string,
    private readonly load: (got: FileRead) => T,
  ) {}

  get(): T {
    countVersionCheck();
    let now: BigIntStats | undefined;
    try {
      now = lstatSync(this.file, { bigint: true, throwIfNoEntry: false });
    } catch (e) {
      this.close();
      return this.load({ state: 'failed', error: e });
    }
    if (this.kept !== null && sameVersion(now, this.held?.version)) return this.kept.value;
    this.close();
    if (now === undefined) {
      this.kept = { value: this.load({ state: 'absent' }) };
      return this.kept.value;
    }
    let fd: number;
    try {
      fd = openStateFile(this.file, 'read');
    } catch (e) {
      return this.load((e as NodeJS.ErrnoException).code === 'ENOENT' ? { state: 'absent' } : { state: 'failed', error: e });
    }
    try {
      const version = fstatSync(fd, { bigint: true });
      const value = this.load({ state: 'read', bytes: readToEnd(fd) });
      this.held = { fd, version };
      this.kept = { value };
      return value;
    } catch (e) {
      closeSync(fd);
      return this.load({ state: 'failed', error: e });
    }
  }

  close(): void {
    if (this.held !== null) closeSync(this.held.fd);
    this.held = null;
    this.kept = null;
  }
}

/** The file now is the version held (or, with none held, is still absent). */
function sameVersion(now: BigIntStats | undefined, held: BigIntStats | undefined): boolean {
  if (now === undefined || held === undefined) return now === held;
  return now.dev === held.dev && now.ino === held.ino && now.size === held.size && now.mtimeNs === held.mtimeNs && now.ctimeNs === held.ctimeNs;
}
