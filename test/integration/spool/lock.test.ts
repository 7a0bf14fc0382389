import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { acquireLock } from '../../../src/spool/index.js';
import { tempEnv, type TempEnv } from '../../helpers/env.js';
import { waitFor } from '../../helpers/wait.js';

const holder = path.join(path.dirname(fileURLToPath(import.meta.url)), 'fixtures', 'lock-holder.mjs');
const STALE_MS = 2000;

let env: TempEnv | null = null;
const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  env?.cleanup();
  env = null;
});

function startHolder(dir: string): { child: ChildProcess; output: () => string } {
  const child = spawn(process.execPath, [holder, dir, String(STALE_MS)], { stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  let out = '';
  child.stdout?.setEncoding('utf8').on('data', (d: string) => (out += d));
  return { child, output: () => out };
}

function newStateDir(): string {
  env = tempEnv();
  const dir = path.join(env.root, 'entry');
  mkdirSync(dir, { mode: 0o700 });
  return dir;
}

const lockAge = (dir: string): number => Date.now() - statSync(path.join(dir, 'consumer.lock')).mtimeMs;

describe('consumer.lock across real processes', () => {
  it('a holder paused past stale loses the lock to a newcomer and learns it on resume; its lock stays the newcomer’s', async () => {
    const dir = newStateDir();
    const h = startHolder(dir);
    await waitFor(() => h.output().includes('held'), { what: 'the holder to take the lock' });
    const refused = await acquireLock(dir, 'consumer.lock', { staleMs: STALE_MS, onCompromised: () => {} });
    expect(refused.ok).toBe(false);

    h.child.kill('SIGSTOP');
    await waitFor(() => lockAge(dir) > STALE_MS + 100, { what: 'the paused holder’s lock to go stale' });
    const taken = await acquireLock(dir, 'consumer.lock', { staleMs: STALE_MS, onCompromised: () => {} });
    if (!taken.ok) throw new Error(taken.reason);
    h.child.kill('SIGCONT');
    await waitFor(() => h.output().includes('check-false') || h.output().includes('compromised'), { what: 'the resumed holder to see its lock is gone' });
    expect(taken.lock.check()).toBe(true);
    await taken.lock.release();
  });

  it('a holder killed with SIGKILL leaves its lock, which a newcomer takes once it is stale', async () => {
    const dir = newStateDir();
    const h = startHolder(dir);
    await waitFor(() => h.output().includes('held'), { what: 'the holder to take the lock' });
    h.child.kill('SIGKILL');
    await new Promise((r) => h.child.once('close', r));
    expect(statSync(path.join(dir, 'consumer.lock')).isDirectory()).toBe(true);
    const taken = await waitFor(
      async () => {
        const r = await acquireLock(dir, 'consumer.lock', { staleMs: STALE_MS, onCompromised: () => {} });
        return r.ok ? r.lock : null;
      },
      { what: 'the dead holder’s lock to go stale and be taken' },
    );
    expect(taken.check()).toBe(true);
    await taken.release();
  });
});
