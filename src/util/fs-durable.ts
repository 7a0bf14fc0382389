import { closeSync, fsyncSync, mkdirSync, openSync, renameSync, statSync, chmodSync, writeSync, unlinkSync } from 'node:fs';
import path from 'node:path';

const isWindows = process.platform === 'win32';

/** fsync a directory so a create or rename in it survives a crash. Windows cannot: skip there. */
export function fsyncDir(dir: string): void {
  if (isWindows) return;
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** Create a directory (and parents) with the given mode, fsyncing the parent of each one made. */
export function ensureDir(dir: string, mode = 0o700): void {
  let exists = false;
  try {
    exists = statSync(dir).isDirectory();
  } catch {
    exists = false;
  }
  if (exists) return;
  ensureDir(path.dirname(dir), mode);
  try {
    mkdirSync(dir, { mode });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
  }
  chmodSync(dir, mode);
  fsyncDir(path.dirname(dir));
}

// Unique per writer, not secret (the directory is private): pid plus Math.random, which needs
// no node:crypto (docs/performance.md), so concurrent writers never share a temp file.
const tempName = (file: string): string =>
  path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.${Math.random().toString(16).slice(2, 10)}.tmp`);

/** A temp file an atomic write leaves beside its target; `pid` is null for older builds' names, which carry none. */
export interface TempFileName {
  target: string;
  pid: number | null;
}

// slice(2, 10) of a hex fraction is 8 digits, fewer when the fraction is short; older builds
// wrote randomBytes(6) as exactly 12 hex digits, so the two shapes never match the same name.
const TEMP_NAME = /^\.(.+)\.([1-9]\d*)\.[0-9a-f]{1,8}\.tmp$/;
const OLD_TEMP_NAME = /^\.(.+)\.[0-9a-f]{12}\.tmp$/;

/** Whether a file name is one of tempName's (or an older build's), and whose it is. */
export function parseTempName(name: string): TempFileName | null {
  const m = TEMP_NAME.exec(name);
  if (m) return { target: m[1]!, pid: Number(m[2]) };
  const old = OLD_TEMP_NAME.exec(name);
  return old ? { target: old[1]!, pid: null } : null;
}

/**
 * What a power cut may do to an atomic replace (a kill -9 never loses a finished one):
 * - `durable`: nothing — the new file is on disk when the call returns.
 * - `whole`: leave the old file instead of the new one, never a torn or empty one (the temp
 *   file is fsynced before the rename; the rename is not fsynced into the directory).
 * - `none`: leave the old file or an empty one — only for records of a live process, which
 *   no longer mean anything once the machine went down.
 */
export type Durability = 'durable' | 'whole' | 'none';

/** temp file → write → fsync → rename → fsync dir (as `durability` asks). Readers see the old or the new file, never half. */
export function writeFileAtomic(file: string, data: string | Uint8Array, mode = 0o600, durability: Durability = 'durable'): void {
  const dir = path.dirname(file);
  const tmp = tempName(file);
  const fd = openSync(tmp, 'w', mode);
  try {
    const buf = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
    let off = 0;
    while (off < buf.length) off += writeSync(fd, buf, off, buf.length - off);
    if (durability !== 'none') fsyncSync(fd);
  } catch (e) {
    closeSync(fd);
    try {
      unlinkSync(tmp);
    } catch {
      /* the temp file is garbage either way */
    }
    throw e;
  }
  closeSync(fd);
  chmodSync(tmp, mode);
  renameSync(tmp, file);
  if (durability === 'durable') fsyncDir(dir);
}
