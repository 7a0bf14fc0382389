import { lstatSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { waitFor } from '../../helpers/wait.js';
import { bridge, directive, stateDirOf, registered, useBridgeWorld } from './world.js';

/**
 * The state entry is private all the way down (issue 18, item 5): after a full bridge run
 * — a connection started, mail delivered, printed and acknowledged — every directory under
 * the state root is 0700 and every file 0600, the lock directory proper-lockfile creates
 * included. Run with the common umask 022, which would otherwise leave 0755/0644 behind.
 */
const world = useBridgeWorld();

function walk(dir: string, out: { path: string; mode: number; kind: string }[] = []): typeof out {
  for (const name of readdirSync(dir)) {
    const p = path.join(dir, name);
    const st = lstatSync(p);
    const kind = st.isDirectory() ? 'dir' : st.isFile() ? 'file' : 'other';
    out.push({ path: p, mode: st.mode & 0o777, kind });
    if (st.isDirectory()) walk(p, out);
  }
  return out;
}

describe('privacy of the state entry', () => {
  it('every directory 0700 and every file 0600 after a full bridge run, the lock directory included', async () => {
    const a = await world.agent();
    const first = await bridge(a, 'private', ['--wait', '0']);
    expect(first.code, first.stderr).toBe(0);
    const dir = stateDirOf(a, world.hub, 'private');
    const sid = await registered(dir);
    await directive(world.hub, `agent:${a.id}#${sid}`, 'private mail');
    const r = await bridge(a, 'private', ['--wait', '20']);
    expect(r.stdout).toContain('private mail');
    // The connection holds its lock while it runs: the walk sees it.
    await waitFor(() => readdirSync(dir).includes('consumer.lock'), { what: 'consumer.lock present' });
    const found = walk(a.stateRoot);
    expect(found.some((f) => f.path.endsWith('consumer.lock') && f.kind === 'dir')).toBe(true);
    const wrong = found.filter((f) => f.kind === 'other' || (f.kind === 'dir' ? f.mode !== 0o700 : f.mode !== 0o600));
    expect(wrong.map((f) => `${f.path} ${f.kind} ${f.mode.toString(8)}`)).toEqual([]);
  });
});
