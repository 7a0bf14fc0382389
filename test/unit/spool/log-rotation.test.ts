import { spawn } from 'node:child_process';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { fakeClock } from '../../../src/util/clock.js';
import { appendLog, LOG_MAX_BYTES } from '../../../src/spool/index.js';
import { knobFromEnv } from '../../../src/core/index.js';
import { gone } from '../../helpers/process.js';
import { tempDir } from './tmp.js';

// The children run the built module (npm run build first), as the integration tests run bin/oh-hai.
const DIST_LOG = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../dist/spool/log.js');

const read = (file: string): string => (existsSync(file) ? readFileSync(file, 'utf8') : '');

async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', '0']);
  await new Promise((r) => child.on('exit', r));
  expect(gone(child.pid!)).toBe(true);
  return child.pid!;
}

describe('bridge.log rotation', () => {
  it('renames bridge.log to bridge.log.1 once the bound is reached, and the next line starts a new bridge.log', () => {
    const dir = tempDir();
    const ctx = { clock: fakeClock(Date.parse('2026-09-18T14:33:07.000Z')), pid: 777, maxBytes: 200 };
    const line = (n: number): string => `2026-09-18T14:33:07.000Z 777 event ${n}\n`;
    // 37-byte lines: the sixth append takes the file to 222 ≥ 200 and rotates it.
    for (let n = 0; n < 5; n++) expect(appendLog(dir, `event ${n}`, ctx)).toBe(true);
    expect(existsSync(path.join(dir, 'bridge.log.1'))).toBe(false);
    expect(appendLog(dir, 'event 5', ctx)).toBe(true);
    expect(read(path.join(dir, 'bridge.log.1'))).toBe([0, 1, 2, 3, 4, 5].map(line).join(''));
    expect(existsSync(path.join(dir, 'bridge.log'))).toBe(false);
    expect(appendLog(dir, 'event 6', ctx)).toBe(true);
    expect(read(path.join(dir, 'bridge.log'))).toBe(line(6));
    expect(statSync(path.join(dir, 'bridge.log')).mode & 0o777).toBe(0o600);
    expect(existsSync(path.join(dir, 'bridge.log.rotating'))).toBe(false);
  });

  it('replaces the previous bridge.log.1: one old generation is kept', () => {
    const dir = tempDir();
    const ctx = { clock: fakeClock(0), pid: 1, maxBytes: 100 };
    // 67-byte lines: every second append rotates, so .1 ends with the last two lines.
    for (let i = 0; i < 12; i++) appendLog(dir, `line ${String(i).padStart(2, '0')} ${'x'.repeat(30)}`, ctx);
    const rotated = read(path.join(dir, 'bridge.log.1'));
    expect(
      rotated
        .split('\n')
        .filter(Boolean)
        .map((l) => l.split(' ')[3]),
    ).toEqual(['10', '11']);
    expect(existsSync(path.join(dir, 'bridge.log'))).toBe(false);
  });

  it('a rotation lock left by a killed process is cleared, and rotation resumes', async () => {
    const dir = tempDir();
    writeFileSync(path.join(dir, 'bridge.log.rotating'), String(await deadPid()), { mode: 0o600 });
    const ctx = { clock: fakeClock(0), pid: process.pid, maxBytes: 10 };
    appendLog(dir, 'held back by the dead lock', ctx);
    expect(existsSync(path.join(dir, 'bridge.log.1'))).toBe(false);
    expect(existsSync(path.join(dir, 'bridge.log.rotating'))).toBe(false);
    appendLog(dir, 'rotates now', ctx);
    expect(read(path.join(dir, 'bridge.log.1'))).toContain('held back by the dead lock');
    expect(read(path.join(dir, 'bridge.log.1'))).toContain('rotates now');
  });

  it('a lock held by a live process is left alone; that append does not rotate', () => {
    const dir = tempDir();
    writeFileSync(path.join(dir, 'bridge.log.rotating'), String(process.pid), { mode: 0o600 });
    expect(appendLog(dir, 'over the bound', { clock: fakeClock(0), pid: process.pid, maxBytes: 10 })).toBe(true);
    expect(existsSync(path.join(dir, 'bridge.log.rotating'))).toBe(true);
    expect(existsSync(path.join(dir, 'bridge.log.1'))).toBe(false);
    expect(read(path.join(dir, 'bridge.log'))).toContain('over the bound');
  });

  it('OH_HAI_LOG_MAX_BYTES sets the bound; unset keeps 1 MiB; anything but a positive number is refused, naming it', () => {
    expect(LOG_MAX_BYTES).toBe(1024 * 1024);
    expect(knobFromEnv({ OH_HAI_LOG_MAX_BYTES: '4096' }, 'logMaxBytes')).toEqual({ ok: true, value: 4096 });
    expect(knobFromEnv({}, 'logMaxBytes')).toEqual({ ok: true, value: LOG_MAX_BYTES });
    for (const bad of ['lots', '0', '-5', '', ' ']) {
      const r = knobFromEnv({ OH_HAI_LOG_MAX_BYTES: bad }, 'logMaxBytes');
      expect(r.ok, JSON.stringify(bad)).toBe(false);
      if (!r.ok)
        expect(r.error).toMatchObject({
          exit: 2,
          code: 'invalid_setting',
          message: expect.stringMatching(/^OH_HAI_LOG_MAX_BYTES (must be a number of bytes, got the string|is -?\d+: it must be greater than 0)/),
        });
    }
    expect(appendLog(path.join(tempDir(), 'missing'), 'x', { clock: fakeClock(0), pid: 1, maxBytes: 1 })).toBe(false);
  });

  /**
   * What is guaranteed with two appenders: rotations are serialized, so bridge.log.1 is always
   * the generation rotated last and only older generations are discarded. Each writer appends
   * in order, so the lines of one writer still on disk are exactly a suffix of what it wrote:
   * no gap (a lost line), no repeat, no torn line. bridge.log.1 was rotated at the bound, so it
   * holds at least the bound's worth of bytes, whenever it is looked at.
   */
  it('two processes appending concurrently across many rotations lose, repeat and tear no line', async () => {
    const dir = tempDir();
    const K = 1500;
    const maxBytes = 4096;
    const script = `
      import { appendLog } from ${JSON.stringify(DIST_LOG)};
      const [dir, id, k, max] = process.argv.slice(1);
      const ctx = { clock: { now: () => Date.now(), monotonic: () => 0 }, pid: process.pid, maxBytes: Number(max) };
      for (let i = 0; i < Number(k); i++) if (!appendLog(dir, id + ' ' + i, ctx)) process.exit(3);
    `;
    const run = (id: string): Promise<number | null> => {
      const child = spawn(process.execPath, ['--input-type=module', '-e', script, dir, id, String(K), String(maxBytes)], { stdio: 'inherit' });
      return new Promise((r) => child.on('exit', r));
    };
    const exits = Promise.all([run('wa'), run('wb')]);
    // Watch bridge.log.1 while they run: every generation in it was rotated at the bound, so
    // it is never seen smaller (two rotations of one generation would put a fresh file there).
    let running = true;
    let smallest = Infinity;
    void exits.then(() => (running = false));
    while (running) {
      try {
        smallest = Math.min(smallest, statSync(path.join(dir, 'bridge.log.1')).size);
      } catch {
        /* not rotated yet */
      }
      await new Promise((r) => setImmediate(r));
    }
    expect(await exits).toEqual([0, 0]);
    expect(smallest).toBeGreaterThanOrEqual(maxBytes);

    const rotated = read(path.join(dir, 'bridge.log.1'));
    const current = read(path.join(dir, 'bridge.log'));
    expect(Buffer.byteLength(rotated)).toBeGreaterThanOrEqual(maxBytes);
    const lines = (rotated + current).split('\n');
    expect(lines.pop()).toBe('');
    const seen = new Map<string, number[]>([
      ['wa', []],
      ['wb', []],
    ]);
    for (const l of lines) {
      const m = /^\d{4}-\d\d-\d\dT[\d:.]+Z \d+ (wa|wb) (\d+)$/.exec(l);
      expect(m, `a torn or foreign line: ${JSON.stringify(l)}`).not.toBeNull();
      seen.get(m![1]!)!.push(Number(m![2]));
    }
    // Many rotations happened: far fewer lines are left than the 2K written.
    expect(lines.length).toBeLessThan(K);
    for (const [id, got] of seen) {
      const sorted = [...got].sort((a, b) => a - b);
      expect(new Set(sorted).size, `${id} repeated a line`).toBe(sorted.length);
      if (sorted.length === 0) continue;
      const first = sorted[0]!;
      expect(sorted, `${id} lost a line between ${first} and ${K - 1}`).toEqual(Array.from({ length: K - first }, (_, i) => first + i));
    }
  });
});
