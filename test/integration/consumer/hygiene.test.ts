import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { gone } from '../../helpers/process.js';
import { FAST_HUB, useBenches, waitFor } from './harness.js';

const world = useBenches({ args: FAST_HUB });

const readOr = (file: string): string => (existsSync(file) ? readFileSync(file, 'utf8') : '');

describe('the state entry kept tidy by a real connection', () => {
  it('sweeps a temp file whose writer was killed, keeps a live writer’s and every other file, and rotates bridge.log at the bound it is given', async () => {
    const bench = await world.bench({ env: { OH_HAI_LOG_MAX_BYTES: '600' } });
    bench.settings();
    bench.attend();
    const child = spawn(process.execPath, ['-e', '0']);
    await new Promise((r) => child.on('exit', r));
    expect(gone(child.pid!)).toBe(true);
    const deadTemp = `.cursor.json.${child.pid}.0badc0de.tmp`;
    const liveTemp = `.reader.json.${process.pid}.0badc0de.tmp`;
    const other = 'notes.txt';
    for (const name of [deadTemp, liveTemp, other]) writeFileSync(path.join(bench.dir, name), 'half a record', { mode: 0o600 });
    // An old bridge.log just under the bound: the connection's first line takes it over.
    const planted = 'an older line\n'.repeat(40);
    writeFileSync(path.join(bench.dir, 'bridge.log'), planted, { mode: 0o600 });

    bench.start();
    await bench.waitRunning();
    const rotated = await waitFor(() => readOr(path.join(bench.dir, 'bridge.log.1')), { what: 'bridge.log.1' });
    expect(rotated.startsWith(planted)).toBe(true);
    expect(rotated.slice(planted.length)).toMatch(/^\S+ \d+ swept 1 temp file left by crashed writes\n$/);
    expect(readOr(path.join(bench.dir, 'bridge.log'))).toContain('consumer starting');
    expect(existsSync(path.join(bench.dir, deadTemp))).toBe(false);
    expect(readFileSync(path.join(bench.dir, liveTemp), 'utf8')).toBe('half a record');
    expect(readFileSync(path.join(bench.dir, other), 'utf8')).toBe('half a record');
  });
});
