import { spawn, type ChildProcess } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { processExited, stopAndWait } from '../../../src/spool/index.js';
import { fakeClock, systemClock } from '../../../src/util/clock.js';
import { waitFor } from '../../helpers/wait.js';

// Real processes, real signals: a child that stops on SIGTERM and one that ignores it.
const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

async function child(onTerm: 'exit' | 'ignore'): Promise<number> {
  const code =
    onTerm === 'exit'
      ? "process.on('SIGTERM', () => setTimeout(() => process.exit(0), 30)); console.log('ready'); setInterval(() => {}, 1000);"
      : "process.on('SIGTERM', () => {}); console.log('ready'); setInterval(() => {}, 1000);";
  const c = spawn(process.execPath, ['-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(c);
  let out = '';
  c.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  await waitFor(() => out.includes('ready'), { what: 'the child to install its handler' });
  return c.pid!;
}

describe('stopAndWait: SIGTERM, then poll until gone, with a deadline and backoff', () => {
  it('a process that stops on SIGTERM: gone, and really gone', async () => {
    const pid = await child('exit');
    const end = await stopAndWait(pid, { gone: () => processExited(pid), budgetMs: 30_000, clock: systemClock });
    expect(end).toEqual({ kind: 'gone' });
    expect(processExited(pid)).toBe(true);
  });

  it('a process that ignores SIGTERM: timeout once the budget is spent, polling with growing intervals up to 200 ms', async () => {
    const pid = await child('ignore');
    const clock = fakeClock(0);
    const ended = stopAndWait(pid, { gone: () => processExited(pid), budgetMs: 1000, clock });
    let done = false;
    void ended.then(() => (done = true));
    // Each turn lets the poll's sleep come due, exactly.
    while (!done) {
      await Promise.race([clock.waiting(), ended]);
      if (!done) clock.advance(clock.slept.at(-1)!);
    }
    expect(await ended).toEqual({ kind: 'timeout' });
    const polls = clock.slept;
    expect(polls[0]).toBe(10);
    expect(polls.slice(0, -1)).toEqual([...polls.slice(0, -1)].sort((x, y) => x - y));
    expect(Math.max(...polls)).toBe(200);
    expect(polls.reduce((x, y) => x + y, 0)).toBeCloseTo(1000, 6);
    expect(processExited(pid)).toBe(false);
    expect(clock.slept[0]).toBe(10);
    expect(clock.slept.slice(1).every((ms, i) => ms >= clock.slept[i]! || ms === 1000 - clock.slept.slice(0, i + 1).reduce((a, b) => a + b, 0))).toBe(true);
    expect(Math.max(...clock.slept)).toBeLessThanOrEqual(200);
  });

  it('a pid that is not there: gone at once; the waiter asked to stop: cancelled', async () => {
    const pid = await child('ignore');
    const c = children[0]!;
    c.kill('SIGKILL');
    // Reaped (not a zombie, which a signal still reaches): the kill answers ESRCH.
    await waitFor(() => c.signalCode !== null, { what: 'the child to be reaped' });
    expect(await stopAndWait(pid, { gone: () => false, budgetMs: 1000, clock: fakeClock() })).toEqual({ kind: 'gone' });

    const other = await child('ignore');
    const asked = new AbortController();
    asked.abort();
    expect(await stopAndWait(other, { gone: () => false, budgetMs: 1000, clock: fakeClock(), signal: asked.signal })).toEqual({ kind: 'cancelled' });
  });
});
