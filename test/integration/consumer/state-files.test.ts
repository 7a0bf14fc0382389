import { execFileSync } from 'node:child_process';
import { readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runOhHai } from '../../helpers/cli.js';
import { FAST_HUB, useBenches, waitFor } from './harness.js';

/**
 * Findings 5 and 7: state files are opened without following a symlink or blocking on a
 * FIFO, anything but a regular file is refused with a clear error and exit 1, and a spool
 * replaced under a running connection is noticed before anything is appended to it.
 */
const world = useBenches({ args: FAST_HUB });

const mkfifo = (file: string): boolean => {
  try {
    execFileSync('mkfifo', [file]);
    return true;
  } catch {
    console.log(`skipped: mkfifo is not available here to make ${file}`);
    return false;
  }
};

describe('state files that are not regular files', () => {
  it('a bridge.ndjson symlink to another file: exit 1 naming it, the target neither cut nor appended to', async () => {
    const bench = await world.bench();
    bench.settings();
    bench.attend();
    const victim = path.join(bench.temp.root, 'victim.txt');
    const precious = 'precious data without a trailing newline';
    writeFileSync(victim, precious);
    symlinkSync(victim, path.join(bench.dir, 'bridge.ndjson'));
    const r = await bench.runToEnd();
    expect(r.code).toBe(1);
    expect(bench.consumer()!.stop_message).toMatch(/bridge\.ndjson is a symbolic link, not a regular file.*Remove it/);
    expect(readFileSync(victim, 'utf8')).toBe(precious);
  });

  it('a FIFO at the spool path: the connection stops with 1 at once and the reader does not hang', async () => {
    const bench = await world.bench();
    bench.settings();
    bench.attend();
    if (!mkfifo(path.join(bench.dir, 'bridge.ndjson'))) return;
    const r = await bench.runToEnd([], {}, 30_000);
    expect(r.code).toBe(1);
    expect(bench.consumer()!.stop_message).toMatch(/bridge\.ndjson is a FIFO \(named pipe\), not a regular file/);
    // The reader of the same entry: it must answer (any documented exit), not block in open(2).
    // reader.json named this test process as the attending reader: a real reader would SIGTERM it.
    rmSync(path.join(bench.dir, 'reader.json'));
    const reader = await runOhHai(['bridge', '--wait', '0'], {
      env: { ...bench.env, MA2H_HUB_URL: bench.hub.url, MA2H_AGENT_SESSION_ID: 'test-session' },
      timeoutMs: 30_000,
    });
    expect(reader.code, reader.stderr).toBe(1);
    expect(reader.stderr).toMatch(/FATAL \(exit 1, (spool_write_failed|state_unreadable)\).*is a FIFO \(named pipe\), not a regular file/);
    expect(reader.stderr).not.toMatch(/this is a bug/);
  });

  it('a spool replaced under a running connection: it stops with 1 naming the replacement, before appending a record', async () => {
    const bench = await world.bench();
    bench.settings();
    bench.attend();
    bench.start();
    await bench.waitRunning();
    await bench.notify('before');
    await waitFor(() => bench.entries().length === 1, { what: 'the first record spooled' });
    const spool = path.join(bench.dir, 'bridge.ndjson');
    const swapped = path.join(bench.dir, 'swapped-in');
    writeFileSync(swapped, '');
    renameSync(swapped, spool);
    await bench.notify('after');
    const { record, code } = await bench.waitStopped(bench.procs[0]!);
    expect(code).toBe(1);
    expect(record.stop_message).toMatch(/bridge\.ndjson was replaced while open/);
    expect(readFileSync(spool, 'utf8')).toBe('');
  });
});
