import path from 'node:path';

/**
 * Faults no real process gives on demand — a write or an fsync that fails, a short write —
 * for the durable writes (spool, ledger, seen-jti, cursor). A test file installs it over
 * node:fs, which every module under test then imports:
 *
 *   vi.mock('node:fs', async (actual) => (await import('../../helpers/fs-faults.js')).faultyFs(await actual()));
 *
 * Everything else passes through to the real module. Files are known by the path they were
 * opened with (the basename is what tests match on), so the checks survive a module that
 * opens its file differently; `events` records every write and fsync in order, with the file.
 * This module must not import node:fs itself: it is loaded from inside that mock.
 */
type Fs = typeof import('node:fs');

export type IoOp = 'write' | 'fsync';

export interface IoEvent {
  op: IoOp;
  fd: number;
  /** The basename the descriptor was opened with ('?' for one opened before the mock). */
  file: string;
}

interface Fault {
  op: IoOp;
  match: (file: string) => boolean;
  code: 'EIO' | 'ENOSPC';
  /** Bytes a failing write still puts down first (a torn record), in one short write. */
  writeFirst: number;
}

const ERRNO = { EIO: [-5, 'i/o error'], ENOSPC: [-28, 'no space left on device'] } as const;

/** The error Node throws for a failed syscall: "EIO: i/o error, fsync" with code, errno and syscall. */
export function syscallError(code: Fault['code'], syscall: string): NodeJS.ErrnoException {
  const [errno, text] = ERRNO[code];
  return Object.assign(new Error(`${code}: ${text}, ${syscall}`), { code, errno, syscall });
}

const files = new Map<number, string>();
const faults: Fault[] = [];
let cap: { match: (file: string) => boolean; bytes: number } | null = null;

export const io = {
  events: [] as IoEvent[],
  /** The next write/fsync on a file whose basename matches fails (once). */
  failNext(op: IoOp, match: (file: string) => boolean, opts: { code?: Fault['code']; writeFirst?: number } = {}): void {
    faults.push({ op, match, code: opts.code ?? 'EIO', writeFirst: opts.writeFirst ?? 0 });
  },
  /** Every write to a matching file takes at most `bytes` bytes (a short write the caller must loop over). */
  capWrites(match: (file: string) => boolean, bytes: number): void {
    cap = { match, bytes };
  },
  /** Events on matching files since `from` (an index into events). */
  since(from: number, match: (file: string) => boolean = () => true): IoEvent[] {
    return io.events.slice(from).filter((e) => match(e.file));
  },
  reset(): void {
    io.events.length = 0;
    faults.length = 0;
    cap = null;
  },
};

const fileOf = (fd: number): string => files.get(fd) ?? '?';

function takeFault(op: IoOp, file: string): Fault | null {
  const i = faults.findIndex((f) => f.op === op && f.match(file));
  if (i === -1) return null;
  const [fault] = faults.splice(i, 1);
  return fault ?? null;
}

export function faultyFs(actual: Fs): Fs {
  const openSync = ((p: Parameters<Fs['openSync']>[0], ...rest: unknown[]) => {
    const fd = (actual.openSync as (...a: unknown[]) => number)(p, ...rest);
    files.set(fd, path.basename(String(p)));
    return fd;
  }) as Fs['openSync'];

  const closeSync = ((fd: number) => {
    files.delete(fd);
    actual.closeSync(fd);
  }) as Fs['closeSync'];

  const writeSync = ((fd: number, data: unknown, ...rest: unknown[]) => {
    const file = fileOf(fd);
    io.events.push({ op: 'write', fd, file });
    const fault = takeFault('write', file);
    const isBytes = data instanceof Uint8Array;
    const offset = isBytes && typeof rest[0] === 'number' ? rest[0] : 0;
    const length = isBytes ? (typeof rest[1] === 'number' ? rest[1] : data.length - offset) : 0;
    const position = isBytes ? rest[2] : undefined;
    if (fault) {
      if (fault.writeFirst > 0 && isBytes) {
        // A torn write: part of the record lands, and the next write of it fails.
        faults.push({ ...fault, writeFirst: 0 });
        return actual.writeSync(fd, data, offset, Math.min(length, fault.writeFirst), position as number | null | undefined);
      }
      throw syscallError(fault.code, 'write');
    }
    if (cap && isBytes && cap.match(file)) return actual.writeSync(fd, data, offset, Math.min(length, cap.bytes), position as number | null | undefined);
    return (actual.writeSync as (...a: unknown[]) => number)(fd, data, ...rest);
  }) as Fs['writeSync'];

  const fsyncSync = ((fd: number) => {
    const file = fileOf(fd);
    io.events.push({ op: 'fsync', fd, file });
    const fault = takeFault('fsync', file);
    if (fault) throw syscallError(fault.code, 'fsync');
    actual.fsyncSync(fd);
  }) as Fs['fsyncSync'];

  return { ...actual, openSync, closeSync, writeSync, fsyncSync, default: { ...actual, openSync, closeSync, writeSync, fsyncSync } } as Fs;
}
