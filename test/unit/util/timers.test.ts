import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { every, fakeClock } from '../../../src/util/clock.js';
import { watchFiles } from '../../../src/spool/watch.js';
import { mcpCheck } from '../../../src/cli/doctor/checks/mcp.js';

// The timers that used to be bare setInterval/setTimeout (issue 13: "a clock with timers threaded
// through"): each now runs on the clock it is given, so fake time decides when it fires.

describe('every', () => {
  it('fires every ms on its clock, never before, and not after it is stopped', () => {
    const clock = fakeClock();
    const fired: number[] = [];
    const stop = every(clock, 2000, () => fired.push(clock.monotonic()));
    clock.advance(1999);
    expect(fired).toEqual([]);
    clock.advance(1);
    expect(fired).toEqual([2000]);
    clock.advance(4000);
    expect(fired).toEqual([2000, 4000, 6000]);
    stop();
    clock.advance(10_000);
    expect(fired).toEqual([2000, 4000, 6000]);
    expect(clock.pending()).toBe(0);
  });

  it('may be stopped from inside its own callback', () => {
    const clock = fakeClock();
    let n = 0;
    const stop = every(clock, 100, () => {
      n++;
      stop();
    });
    clock.advance(1000);
    expect(n).toBe(1);
    expect(clock.pending()).toBe(0);
  });
});

describe("watchFiles' safety poll", () => {
  let dir = '';
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('runs on the clock it is given at pollMs, re-arms after each poll, and stops with the watcher', () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'oh-hai-watch-'));
    const clock = fakeClock();
    let changes = 0;
    const dispose = watchFiles(dir, ['cursor.json'], () => changes++, { pollMs: 500, clock });
    expect(clock.pending()).toBe(1);
    writeFileSync(path.join(dir, 'cursor.json'), '{}');
    clock.advance(500);
    // The poll saw the new file (fs.watch may have said so too): at least one change, and the poll is armed again.
    expect(changes).toBeGreaterThanOrEqual(1);
    expect(clock.pending()).toBe(1);
    dispose();
    expect(clock.pending()).toBe(0);
  });
});

describe("doctor's mcp check", () => {
  it('fails on its clock when the server never lists its tools, and not before the bound', async () => {
    const clock = fakeClock();
    // A program that starts and never answers JSON-RPC: only the check's timer can end the wait.
    const self = { execPath: process.execPath, args: ['-e', 'setInterval(() => {}, 1000)'] };
    let settled = false;
    const result = mcpCheck({ env: process.env, cwd: process.cwd(), self, clock }, 10_000).then((c) => {
      settled = true;
      return c;
    });
    await clock.waiting();
    clock.advance(9_999);
    await new Promise<void>((r) => setImmediate(r));
    expect(settled).toBe(false);
    clock.advance(1);
    const c = await result;
    expect(c.status).toBe('fail');
    expect(c.detail).toContain('did not list its tools within 10 s');
  });
});
