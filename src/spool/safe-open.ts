import { closeSync, constants, fstatSync, lstatSync, openSync, readSync, type Stats } from 'node:fs';
import path from 'node:path';
import { countOpen } from './io-counts.js';

/**
 * Opening a state file: never through a symbolic link (O_NOFOLLOW), never blocking on a
 * FIFO (O_NONBLOCK), and nothing but a regular file. A symlink planted at bridge.ndjson
 * would otherwise have its target cut to "the last valid record" by tail recovery and
 * spool lines appended to it; a FIFO there would hang open(2) for good, deaf to signals.
 */

/** Thrown for a state file that is a symlink, FIFO, directory, socket or device; `code` is 'ENOTREG'. */
export class NotRegularFileError extends Error {
  readonly code = 'ENOTREG';
}

const kindOf = (st: Stats): string =>
  st.isSymbolicLink()
    ? 'a symbolic link'
    : st.isFIFO()
      ? 'a FIFO (named pipe)'
      : st.isDirectory()
        ? 'a directory'
        : st.isSocket()
          ? 'a socket'
          : st.isCharacterDevice() || st.isBlockDevice()
            ? 'a device'
            : 'not a regular file';

const refuse = (file: string, what: string): NotRegularFileError =>
  new NotRegularFileError(
    `${file} is ${what}, not a regular file; oh-hai never follows, truncates or waits on one in its state entry. Remove it (rm ${what === 'a directory' ? '-r ' : ''}'${file}') and run again`,
  );

/**
 * Open `file` for reading or for appending (created 0600 when absent). Throws
 * NotRegularFileError for anything but a regular file; other errors (ENOENT, EACCES) as
 * open(2) gives them.
 */
export function openStateFile(file: string, mode: 'read' | 'append'): number {
  const access = mode === 'read' ? constants.O_RDONLY : constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT;
  countOpen(path.basename(file));
  let fd: number;
  try {
    fd = openSync(file, access | constants.O_NOFOLLOW | constants.O_NONBLOCK, 0o600);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    // ELOOP: the last component is a symlink (O_NOFOLLOW). ENXIO: a FIFO with no reader, opened to write.
    if (code === 'ELOOP' || code === 'ENXIO') throw refuse(file, kindOf(lstatSync(file)));
    throw e;
  }
  const st = fstatSync(fd);
  if (!st.isFile()) {
    closeSync(fd);
    throw refuse(file, kindOf(st));
  }
  return fd;
}

/** A whole state file as text, opened as openStateFile does. */
export function readStateFile(file: string): string {
  return readStateBytes(file).toString('utf8');
}

/** A whole state file's bytes, opened as openStateFile does. */
export function readStateBytes(file: string): Buffer {
  const fd = openStateFile(file, 'read');
  try {
    return readToEnd(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * Every byte of an open file from its start (positioned reads: the descriptor's offset is left
 * alone), in one buffer grown as needed. A state file fits the first 64 KiB: no copy per chunk
 * and no Buffer.concat, whose code (concat, from, _copyActual) Node 20 compiles on every bridge
 * run otherwise (docs/performance.md "Warm bridge (session 14)").
 */
export function readToEnd(fd: number): Buffer {
  let buf = Buffer.allocUnsafe(64 * 1024);
  for (let end = 0; ;) {
    if (end === buf.length) {
      const bigger = Buffer.allocUnsafe(buf.length * 2);
      buf.copy(bigger, 0, 0, end);
      buf = bigger;
    }
    const n = readSync(fd, buf, end, buf.length - end, end);
    if (n === 0) return buf.subarray(0, end);
    end += n;
  }
}

/** Which file an open fd is: fixed for the fd's life, whatever happens to its path. */
export interface FileIdentity {
  dev: number;
  ino: number;
}

export function identityOf(fd: number): FileIdentity {
  const { dev, ino } = fstatSync(fd);
  return { dev, ino };
}

/**
 * Why the file now at `file` is not the one open (`open`, its identity; removed, or replaced
 * by another file or a symlink under a running writer), or null while it still is.
 */
export function replacedUnder(open: FileIdentity, file: string): string | null {
  let now: Stats;
  try {
    now = lstatSync(file);
  } catch (e) {
    return `${file} was removed while open (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`;
  }
  if (now.dev === open.dev && now.ino === open.ino) return null;
  return `${file} was replaced while open (now ${now.isFile() ? 'another file' : kindOf(now)}); appending to the old one would lose what is written`;
}
