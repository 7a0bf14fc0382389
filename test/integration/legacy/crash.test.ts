import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ADOPTION_STEPS } from '../../../src/cli/resolve/adopt-legacy.js';
import { collect } from '../../helpers/cli.js';
import { waitFor } from '../../helpers/wait.js';
import { gone } from '../../helpers/process.js';
import { consumerOf, sessionIdOf } from '../bridge/world.js';
import { bridgeIn, entryIdsIn, readSpool, sessionState, useLegacyWorlds } from './world.js';

/**
 * kill -9 in the middle of adoption, after each durable step in turn (docs/legacy-0.9.md,
 * "A crash at any point"): the next `oh-hai bridge` finishes the adoption, prints every
 * unread record exactly once, carries every record over exactly once, and keeps the session.
 */

const driver = path.join(path.dirname(fileURLToPath(import.meta.url)), 'crash-driver.mjs');

const legacy = useLegacyWorlds();

describe('a crash during adoption', () => {
  it.each(ADOPTION_STEPS)('killed right after %s: the next run completes the adoption without loss or duplication', async (step) => {
    const w = await legacy.world({ count: 3, read: 1, connection: 'stream' });

    const child = spawn(process.execPath, [driver, w.stateDir, w.dir, w.hub.url, w.me.id, step], {
      cwd: w.work,
      env: { PATH: process.env.PATH, DRIVER_TOKEN: w.me.token, OH_HAI_STOP_WAIT_MS: '20000' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const crashed = await collect(child);
    expect(crashed.signal, `${crashed.stdout}${crashed.stderr}`).toBe('SIGKILL');
    const marker = JSON.parse(readFileSync(path.join(w.dir, 'adopted.json'), 'utf8')) as { into: string; state: string };
    expect(marker).toMatchObject({ into: w.stateDir, state: ADOPTION_STEPS.indexOf(step) >= ADOPTION_STEPS.indexOf('marked') ? 'done' : 'started' });

    const r = await bridgeIn(w, ['--wait', '0']);
    expect(r.code, r.stderr).toBe(0);
    const printed = r.stdout.trimEnd().split('\n');
    expect(printed).toHaveLength(2);
    expect(printed[0]).toContain(w.sent[1]!.text);
    expect(printed[1]).toContain(w.sent[2]!.text);
    // Told once: by the run that completes the adoption (a crash after the last step already completed it).
    expect(r.stderr.split(`adopted the 0.9 bridge home ${w.dir}`)).toHaveLength(step === 'session' ? 1 : 2);
    expect(gone(w.connection!.pid!)).toBe(true);

    expect(entryIdsIn(readSpool(w.stateDir))).toEqual(w.sent.map((s) => s.entryId));
    expect(JSON.parse(readFileSync(path.join(w.dir, 'adopted.json'), 'utf8'))).toMatchObject({ into: w.stateDir, state: 'done' });
    expect(sessionIdOf(w.stateDir)).toBe(w.session.id);
    await waitFor(
      async () => {
        const c = consumerOf(w.stateDir);
        const s = await sessionState(w, w.session.id);
        return c !== null && s.state === 'active' && s.holder?.pid === c.pid;
      },
      { timeoutMs: 40_000, what: `our connection to hold ${w.session.id}` },
    );

    const again = await bridgeIn(w, ['--wait', '0.2']);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toBe('');
    expect(again.stderr).not.toContain('0.9 bridge home');
  });
});
