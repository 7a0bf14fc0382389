import { rmdirSync, utimesSync, mkdirSync, statSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { acquireLock, type HeldLock } from '../../../src/spool/index.js';
import { tempDir } from './tmp.js';

async function take(dir: string, onCompromised: (e: Error) => void = () => {}): Promise<HeldLock> {
  const r = await acquireLock(dir, 'consumer.lock', { staleMs: 5000, onCompromised });
  if (!r.ok) throw new Error(r.reason);
  return r.lock;
}

describe('acquireLock', () => {
  it('holds, refuses a second taker naming the lock, and releases', async () => {
    const dir = tempDir();
    const lock = await take(dir);
    expect(lock.check()).toBe(true);
    expect(statSync(lock.path).isDirectory()).toBe(true);
    const second = await acquireLock(dir, 'consumer.lock', { staleMs: 5000, onCompromised: () => {} });
    expect(second.ok).toBe(false);
    if (!second.ok) {
      expect(second.code).toBe('held');
      if (second.code === 'held') expect(second.holder).toBe(lock.path);
    }
    await lock.release();
    expect(lock.check()).toBe(false);
    expect(() => statSync(lock.path)).toThrow();
    const third = await take(dir);
    await third.release();
  });

  it('check() turns false when the lock looks abandoned to others (mtime older than stale)', async () => {
    const dir = tempDir();
    const lock = await take(dir);
    const old = new Date(Date.now() - 60_000);
    utimesSync(lock.path, old, old);
    expect(lock.check()).toBe(false);
    await lock.release();
  });

  it('check() turns false when another process took the lock over, and release leaves theirs alone', async () => {
    const dir = tempDir();
    const lock = await take(dir);
    rmdirSync(lock.path);
    mkdirSync(lock.path);
    // the new directory may even reuse the inode number; its birth time still differs
    expect(lock.check()).toBe(false);
    await lock.release();
    expect(statSync(lock.path).isDirectory()).toBe(true);
  });
});
