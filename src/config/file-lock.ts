import path from 'node:path';
import { ensureDir } from '../util/fs-durable.js';

/**
 * Run `fn` while holding `<file>.lock` (proper-lockfile), so read-modify-write cycles on the
 * same file from concurrent `oh-hai` processes are serialised. The file itself need not exist.
 * A lock compromised while held (a holder paused past `stale`) fails the call after `fn`:
 * the write was an atomic rename, so the file is whole, but another writer may have raced it.
 */
export async function withFileLock<T>(file: string, fn: () => T | Promise<T>): Promise<T> {
  ensureDir(path.dirname(file), 0o700);
  // Loaded here, not at the top: every command that reads config imports this module, and
  // proper-lockfile (with graceful-fs) is the costliest import of the bridge's warm path.
  const { default: lockfile } = await import('proper-lockfile');
  let compromised: Error | null = null;
  const release = await lockfile.lock(file, {
    realpath: false,
    stale: 10_000,
    retries: { retries: 200, factor: 1.3, minTimeout: 10, maxTimeout: 200, randomize: true },
    onCompromised: (err) => {
      compromised = err;
    },
  });
  try {
    return await fn();
  } finally {
    await release().catch(() => undefined);
    if (compromised) throw new Error(`lost the lock on ${file} while writing it: ${String(compromised)}`);
  }
}
