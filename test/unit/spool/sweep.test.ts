import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { fakeClock } from '../../../src/util/clock.js';
import { parseTempName, writeFileAtomic } from '../../../src/util/fs-durable.js';
import { openStateDir, type StateDir } from '../../../src/spool/index.js';
import { gone } from '../../helpers/process.js';
import { tempDir } from './tmp.js';

const HOUR = 60 * 60 * 1000;
const NOW = Date.parse('2026-09-18T14:33:07.000Z');

async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', '0']);
  await new Promise((r) => child.on('exit', r));
  expect(gone(child.pid!)).toBe(true);
  return child.pid!;
}

function stateDirAt(dir: string): StateDir {
  const opened = openStateDir(dir, { create: false, log: { clock: fakeClock(NOW), pid: 4242 } });
  if (!opened.ok) throw new Error(opened.reason);
  return opened.value;
}

/** A file with the given mtime (ms epoch). */
function plant(dir: string, name: string, mtimeMs: number): void {
  writeFileSync(path.join(dir, name), 'half a record', { mode: 0o600 });
  utimesSync(path.join(dir, name), mtimeMs / 1000, mtimeMs / 1000);
}

describe('parseTempName', () => {
  it('reads the writer pid from the current shape and none from the older one', () => {
    expect(parseTempName('.cursor.json.4242.9f3a01bc.tmp')).toEqual({ target: 'cursor.json', pid: 4242 });
    expect(parseTempName('.reader.json.17.a.tmp')).toEqual({ target: 'reader.json', pid: 17 });
    expect(parseTempName('.session.json.9f3a01bc55d2.tmp')).toEqual({ target: 'session.json', pid: null });
    for (const other of [
      'cursor.json',
      'bridge.log',
      'bridge.log.1',
      '.cursor.json.tmp',
      'x.4242.9f3a01bc.tmp',
      '.cursor.json.4242.9f3a01bc5.tmp',
      '.a.9f3a01bc55.tmp',
    ]) {
      expect(parseTempName(other), other).toBeNull();
    }
  });

  it('matches the names writeFileAtomic really leaves', () => {
    const dir = tempDir();
    // A rename onto a non-empty directory fails after the temp file is written: the temp stays, as after a crash.
    mkdirSync(path.join(dir, 'cursor.json', 'inside'), { recursive: true });
    expect(() => writeFileAtomic(path.join(dir, 'cursor.json'), '{}')).toThrow();
    const left = readdirSync(dir).filter((n) => n !== 'cursor.json');
    expect(left).toHaveLength(1);
    expect(parseTempName(left[0]!)).toEqual({ target: 'cursor.json', pid: process.pid });
  });
});

describe('StateDir.sweepTemps', () => {
  it('removes a temp whose writer is gone, keeps a live writer’s and a young old-shape one, and touches nothing else', async () => {
    const dir = tempDir();
    const dead = await deadPid();
    const kept = [
      `.reader.json.${process.pid}.0badc0de.tmp`,
      '.session.json.9f3a01bc55d2.tmp',
      'cursor.json',
      'bridge.log',
      'bridge.ndjson',
      `cursor.json.${dead}.0badc0de.tmp`,
      `.notes.${dead}.tmp`,
    ];
    const removed = [`.cursor.json.${dead}.0badc0de.tmp`, '.consumer.json.aaaabbbbcccc.tmp'];
    for (const name of kept) plant(dir, name, NOW - 5 * HOUR);
    // The young old-shape temp: written 59 minutes ago, its writer may still be about to rename it.
    plant(dir, '.session.json.9f3a01bc55d2.tmp', NOW - 59 * 60 * 1000);
    plant(dir, removed[0]!, NOW);
    plant(dir, removed[1]!, NOW - HOUR - 1000);

    const stateDir = stateDirAt(dir);
    expect(stateDir.sweepTemps(fakeClock(NOW))).toBe(2);
    expect(readdirSync(dir).sort()).toEqual([...kept].sort());
    for (const name of kept.filter((n) => n !== 'bridge.log')) expect(readFileSync(path.join(dir, name), 'utf8')).toBe('half a record');
    expect(readFileSync(path.join(dir, 'bridge.log'), 'utf8')).toBe('half a record2026-09-18T14:33:07.000Z 4242 swept 2 temp files left by crashed writes\n');
  });

  it('an old-shape temp is removed once an hour old by the injected clock', () => {
    const dir = tempDir();
    plant(dir, '.settings.json.0123456789ab.tmp', NOW);
    const clock = fakeClock(NOW + HOUR - 1);
    expect(stateDirAt(dir).sweepTemps(clock)).toBe(0);
    clock.advance(2);
    expect(stateDirAt(dir).sweepTemps(clock)).toBe(1);
    expect(existsSync(path.join(dir, '.settings.json.0123456789ab.tmp'))).toBe(false);
  });

  it('sweeping nothing logs nothing, and a directory with a temp-shaped name is left be', async () => {
    const dir = tempDir();
    const dead = await deadPid();
    writeFileSync(path.join(dir, 'cursor.json'), '{}');
    mkdirSync(path.join(dir, `.cursor.json.${dead}.0badc0de.tmp`));
    expect(stateDirAt(dir).sweepTemps(fakeClock(NOW))).toBe(0);
    expect(existsSync(path.join(dir, `.cursor.json.${dead}.0badc0de.tmp`))).toBe(true);
    const log = existsSync(path.join(dir, 'bridge.log')) ? readFileSync(path.join(dir, 'bridge.log'), 'utf8') : '';
    expect(log).not.toContain('swept');
  });
});
