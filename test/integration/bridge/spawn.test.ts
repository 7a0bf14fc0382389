import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { isSameProcessAlive, parentPid, stampOf } from '../../../src/spool/index.js';
import { descendants } from './proc.js';
import { repoRoot } from '../../helpers/cli.js';
import { waitFor } from '../../helpers/wait.js';

// The launcher runs its intermediate from dist/, so the test drives the built module.
type SpawnModule = typeof import('../../../src/spawn/index.js');
const load = (): Promise<SpawnModule> => import(path.join(repoRoot, 'dist', 'spawn', 'index.js')) as Promise<SpawnModule>;

const sessionId = (pid: number): string | null => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[3] ?? null;
  } catch {
    return null;
  }
};

describe.runIf(process.platform === 'linux')('double-fork launcher', () => {
  const started: number[] = [];
  let dir = '';
  afterEach(() => {
    for (const pid of started.splice(0)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** Launch a program that idles until killed, in a fresh temp dir; its pid is killed after the test. */
  const launchIdler = async (over: { platform?: NodeJS.Platform } = {}): Promise<number> => {
    const { launchDetached } = await load();
    dir = mkdtempSync(path.join(os.tmpdir(), 'oh-hai-spawn-'));
    const res = await launchDetached({
      execPath: process.execPath,
      args: ['-e', 'setInterval(() => {}, 1000)'],
      dir,
      logPath: path.join(dir, 'bridge.log'),
      env: { PATH: process.env.PATH },
      ...over,
    });
    expect(res.ok).toBe(true);
    const pid = res.ok ? res.value.pid : 0;
    started.push(pid);
    return pid;
  };

  it('starts the program detached, relays its pid, leaves no transient file, and is never its parent', async () => {
    const pid = await launchIdler();
    expect(isSameProcessAlive(stampOf(pid))).toBe('alive');
    // The intermediate has exited, so the program was reparented away from this process.
    expect(parentPid(pid)).not.toBe(process.pid);
    expect(descendants(process.pid)).not.toContain(pid);
    // Its own session: a harness ending our process group or session does not reach it.
    expect(sessionId(pid)).toBe(String(pid));
    expect(readdirSync(dir).filter((n) => n.startsWith('spawn.'))).toEqual([]);
  });

  it('reports a program that cannot be started instead of a pid', async () => {
    const { launchDetached } = await load();
    dir = mkdtempSync(path.join(os.tmpdir(), 'oh-hai-spawn-'));
    const res = await launchDetached({ execPath: path.join(dir, 'no-such-program'), args: [], dir, logPath: path.join(dir, 'bridge.log'), env: {} });
    // The intermediate itself is started with the same execPath, so either hop may be the one that fails.
    expect(res.ok).toBe(false);
    expect(!res.ok && res.reason).toMatch(/could not start|ENOENT|without relaying a pid/);
  });

  it('the Windows path is one detached spawn that still relays the pid', async () => {
    const pid = await launchIdler({ platform: 'win32' });
    await waitFor(() => isSameProcessAlive(stampOf(pid)) === 'alive', { what: 'the program to run' });
  });
});
