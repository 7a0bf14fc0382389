import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { processState } from '../../../src/spool/index.js';

// Where /proc lists every process (it shows pid 1), a pid without a /proc entry is gone: no
// kill(pid, 0), whose ESRCH is the first errno exception of a bridge run and dear to build.
describe.runIf(process.platform === 'linux' && existsSync('/proc/1'))('processState without a signal probe', () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it('an exited process is gone, and kill(pid, 0) is not asked', () => {
    const { pid } = spawnSync(process.execPath, ['-e', '0']);
    const kill = vi.spyOn(process, 'kill');
    expect(processState(pid!)).toBe('gone');
    expect(kill).not.toHaveBeenCalled();
  });

  it('a running process is still running', () => {
    expect(processState(process.pid)).toBe('running');
  });
});
