import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, copyFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { hostName, isSameProcessAlive, parentPid, processCommand, processStartTime, processState, selfStamp, stampOf } from '../../../src/spool/index.js';
import { waitFor } from '../../helpers/wait.js';
import { tempDir } from './tmp.js';

const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

function start(cmd: string, args: string[]): ChildProcess {
  const c = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'ignore'] });
  children.push(c);
  return c;
}

const exited = (c: ChildProcess) => new Promise<void>((r) => (c.exitCode !== null || c.signalCode !== null ? r() : c.once('exit', () => r())));

describe.runIf(process.platform === 'linux')('process liveness (Linux /proc)', () => {
  it('this process is alive with a start time, its parent and its command', () => {
    const me = selfStamp(process.pid);
    expect(me).toEqual({ pid: process.pid, host: hostName(), start_time: expect.stringMatching(/^\d+$/) });
    expect(isSameProcessAlive(me)).toBe('alive');
    expect(processState(process.pid)).toBe('running');
    expect(parentPid(process.pid)).toBe(process.ppid);
    expect(processCommand(process.pid)).toContain('node');
  });

  it('a killed child is dead', async () => {
    const c = start('sleep', ['30']);
    await waitFor(() => c.pid !== undefined && processStartTime(c.pid) !== null, { what: 'the child to start' });
    const stamp = stampOf(c.pid!);
    expect(isSameProcessAlive(stamp)).toBe('alive');
    c.kill('SIGKILL');
    await exited(c);
    await waitFor(() => processState(stamp.pid) === 'gone', { what: 'the child to be reaped' });
    expect(isSameProcessAlive(stamp)).toBe('dead');
  });

  it('a recycled pid (right pid, wrong start time) is dead', () => {
    const me = selfStamp(process.pid);
    expect(isSameProcessAlive({ ...me, start_time: String(Number(me.start_time) + 1) })).toBe('dead');
  });

  it('a zombie is dead although kill(pid, 0) succeeds on it', async () => {
    // a background child that exits only when told, under a parent that execs into a sleep that never reaps it
    const fifo = path.join(tempDir(), 'go');
    execFileSync('mkfifo', [fifo]);
    const c = start('sh', ['-c', `head -c1 <'${fifo}' >/dev/null & echo $!; exec sleep 30`]);
    let out = '';
    c.stdout?.setEncoding('utf8').on('data', (d: string) => (out += d));
    const zpid = Number(await waitFor(() => /^\d+\n/.exec(out)?.[0].trim(), { what: 'the background child pid' }));
    await waitFor(() => processCommand(c.pid!) === 'sleep 30', { what: 'the parent to exec into sleep' });
    writeFileSync(fifo, 'x');
    await waitFor(() => processState(zpid) === 'zombie', { what: 'the child to become a zombie' });
    expect(() => process.kill(zpid, 0)).not.toThrow();
    const stamp = stampOf(zpid);
    expect(stamp.start_time).not.toBeNull();
    expect(isSameProcessAlive(stamp)).toBe('dead');
  });

  it('a record from another host is unknown, never dead', () => {
    expect(isSameProcessAlive({ pid: 999_999, host: `${hostName()}-elsewhere`, start_time: '1' })).toBe('unknown');
  });

  it('a pid that does not exist is dead; nonsense pids are handled', () => {
    expect(isSameProcessAlive({ pid: 2 ** 22 + 7, host: hostName(), start_time: '1' })).toBe('dead');
    expect(processStartTime(0)).toBeNull();
    expect(processState(-5)).toBe('gone');
    expect(parentPid(1.5)).toBeNull();
  });

  it('reads the start time of a program whose name contains spaces and parentheses', async () => {
    const exe = path.join(tempDir(), 'a) b (c');
    copyFileSync('/bin/sleep', exe);
    chmodSync(exe, 0o755);
    const c = start(exe, ['30']);
    await waitFor(() => c.pid !== undefined && processStartTime(c.pid) !== null, { what: 'the child to start' });
    expect(processStartTime(c.pid!)).toMatch(/^\d+$/);
    expect(processState(c.pid!)).toBe('running');
    expect(parentPid(c.pid!)).toBe(process.pid);
    expect(processCommand(c.pid!)).toBe(`${exe} 30`);
  });
});
