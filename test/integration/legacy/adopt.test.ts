import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { hubCall } from '../../helpers/hub.js';
import { waitFor } from '../../helpers/wait.js';
import { consumerOf, stateDirOf, sessionIdOf } from '../bridge/world.js';
import { gone } from '../../helpers/process.js';
import { bridgeIn, entryIdsIn, messageState, readSpool, send, sessionState, snapshot, useLegacyWorlds, waitLapsed, type LegacyWorld } from './world.js';

/**
 * Adopting a live 0.9 per-directory home (docs/legacy-0.9.md), end to end: a real Hub, the
 * real `oh-hai bridge` run in the directory the 0.9 home served, the real consumer it starts.
 */

const legacy = useLegacyWorlds();

/** Our connection holds the adopted session at the Hub: same id, its pid, presenting the 0.9 home. */
async function heldByOurConnection(w: LegacyWorld): Promise<number> {
  return waitFor(
    async () => {
      const c = consumerOf(w.stateDir);
      const s = await sessionState(w, w.session.id);
      return c !== null && c.state === 'running' && s.state === 'active' && s.holder?.pid === c.pid && s.holder.home === w.home ? c.pid : null;
    },
    { timeoutMs: 40_000, what: `our connection to hold ${w.session.id}` },
  );
}

describe('a live 0.9 home is adopted into the state entry, once', () => {
  it('keeps its session, prints the unread record, stops its connection, leaves a marker; later runs and other agent sessions adopt nothing', async () => {
    const w = await legacy.world({ count: 3, read: 2, connection: 'stream' });
    const legacyPid = w.connection!.pid!;

    const first = await bridgeIn(w, ['--wait', '0']);
    expect(first.code, first.stderr).toBe(0);
    const printed = first.stdout.trimEnd().split('\n');
    expect(printed).toHaveLength(1);
    expect(printed[0]).toMatch(/^\[mail 3\] notify from agent:/);
    expect(printed[0]).toContain(w.sent[2]!.text);
    const told = first.stderr.split('\n').filter((l) => l.includes('0.9 bridge home'));
    expect(told).toHaveLength(1);
    expect(told[0]).toContain(
      `oh-hai bridge: adopted the 0.9 bridge home ${w.dir} into this agent session's state entry: session ${w.session.id} (${w.session.address}) kept`,
    );
    expect(told[0]).toContain('3 records carried over (1 unread) with the cursor');
    expect(told[0]).toContain(`its 0.9 connection (pid ${legacyPid}) was stopped first`);
    expect(told[0]).toContain(`${w.dir}/adopted.json says where it went`);
    expect(gone(legacyPid)).toBe(true);

    // The same session, now held by our connection under the 0.9 home; no second session registered.
    const pid = await heldByOurConnection(w);
    expect(sessionIdOf(w.stateDir)).toBe(w.session.id);
    const fleet = await hubCall(w.hub, 'GET', '/v1/fleet', { token: w.me.token });
    expect((fleet.body.sessions as { agent_id: string; session_id: string }[]).filter((s) => s.agent_id === w.me.id).map((s) => s.session_id)).toEqual([
      w.session.id,
    ]);
    expect(readFileSync(path.join(w.stateDir, 'bridge.log'), 'utf8')).toContain(`adopted session ${w.session.id}`);

    // The printed record is acknowledged to its sender (redelivered, deduplicated, acked once the cursor passed it).
    await waitFor(async () => (await messageState(w, w.sent[2]!.messageId)) === 'acknowledged', {
      timeoutMs: 30_000,
      what: 'the adopted unread record to be acknowledged',
    });
    expect(entryIdsIn(readSpool(w.stateDir))).toEqual(w.sent.map((s) => s.entryId));

    // The marker says where it went; every 0.9 file is still there, unchanged.
    const marker = JSON.parse(readFileSync(path.join(w.dir, 'adopted.json'), 'utf8')) as Record<string, unknown>;
    expect(marker).toMatchObject({ into: w.stateDir, session: w.session.id, state: 'done' });
    expect(marker.note).toContain('Nothing here was deleted');
    expect(readFileSync(path.join(w.dir, 'bridge.ndjson'), 'utf8')).toBe(w.spoolText);
    expect(readFileSync(path.join(w.dir, 'cursor'), 'utf8')).toBe('2\n');
    const markerBytes = readFileSync(path.join(w.dir, 'adopted.json'), 'utf8');

    // A second run: nothing adopted again, nothing re-printed.
    const again = await bridgeIn(w, ['--wait', '0.2']);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toBe('');
    expect(again.stderr).not.toContain('0.9 bridge home');
    expect(readFileSync(path.join(w.dir, 'adopted.json'), 'utf8')).toBe(markerBytes);
    expect(consumerOf(w.stateDir)?.pid).toBe(pid);

    // Mail to the kept address reaches the adopted entry.
    const later = await send(w, 'after the upgrade');
    const next = await bridgeIn(w, ['--wait', '30']);
    expect(next.code, next.stderr).toBe(0);
    expect(next.stdout).toContain('after the upgrade');
    await waitFor(async () => (await messageState(w, later)) === 'acknowledged', { timeoutMs: 30_000, what: 'the new mail to be acknowledged' });

    // Another agent session in the same checkout does not adopt it (and is not told about it).
    const other = await bridgeIn(w, ['--wait', '0'], { MA2H_AGENT_SESSION_ID: 'another-agent' });
    expect(other.code, other.stderr).toBe(0);
    expect(other.stdout).toBe('');
    expect(other.stderr).not.toContain('0.9 bridge home');
    const otherEntry = stateDirOf(w.me, w.hub, 'another-agent');
    expect(existsSync(path.join(otherEntry, 'adopted-0.9.json'))).toBe(false);
    expect(entryIdsIn(readSpool(otherEntry))).toEqual([]);
    expect(readFileSync(path.join(w.dir, 'adopted.json'), 'utf8')).toBe(markerBytes);
  });

  it('a home live only through its running connection is adopted, and its lapsed session is replaced with an address change', async () => {
    const w = await legacy.world({ count: 2, read: 1, leaseSeconds: 1, connection: 'idle' });
    await waitLapsed(w);

    const first = await bridgeIn(w, ['--wait', '0']);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toContain(w.sent[1]!.text);
    expect(first.stdout).not.toContain(w.sent[0]!.text);
    expect(first.stderr).toContain(`adopted the 0.9 bridge home ${w.dir}`);
    expect(first.stderr).toContain(`the session itself is lapsed, so the connection registers a new one and prints the address change`);
    expect(gone(w.connection!.pid!)).toBe(true);

    const replaced = await waitFor(
      () => {
        const id = sessionIdOf(w.stateDir);
        return id !== null && id !== w.session.id ? id : null;
      },
      { timeoutMs: 40_000, what: 'the connection to replace the lapsed session' },
    );
    // An address change alone is not mail: the run would wait out its 30 s. Mail to the new
    // address (spooled after the change, which went in before session.json named the new session) ends it.
    await send({ ...w, session: { ...w.session, address: `agent:${w.me.id}#${replaced}` } }, 'to the new address');
    const next = await bridgeIn(w, ['--wait', '30']);
    expect(next.code, next.stderr).toBe(0);
    expect(next.stdout).toMatch(new RegExp(`^\\[mail 3\\] address changed \\(session_lapsed\\): ${w.session.address} → agent:${w.me.id}#${replaced} `, 'm'));
    expect(next.stdout).toMatch(/^\[mail 4\] .*"to the new address"$/m);
    const record = JSON.parse(readFileSync(path.join(w.stateDir, 'session.json'), 'utf8')) as { history: { id: string }[] };
    expect(record.history.map((h) => h.id)).toEqual([w.session.id]);
  });

  it('a 0.9 connection that will not stop ends the run with 10 and nothing moved; once it is gone the next run finishes the adoption', async () => {
    const w = await legacy.world({ count: 2, read: 1, connection: 'stubborn' });
    const pid = w.connection!.pid!;
    const before = snapshot(w.dir);

    const refused = await bridgeIn(w, ['--wait', '0'], { OH_HAI_STOP_WAIT_MS: '300' });
    expect(refused.code).toBe(10);
    expect(refused.stdout).toBe('');
    expect(refused.stderr).toContain(
      `oh-hai bridge: FATAL (exit 10, legacy_connection_running) — the 0.9 bridge connection (pid ${pid}) that drains ${w.dir} did not stop within 0s of SIGTERM`,
    );
    expect(refused.stderr).toContain('Nothing was moved yet');
    expect(gone(pid)).toBe(false);
    expect(existsSync(path.join(w.stateDir, 'session.json'))).toBe(false);
    expect(existsSync(path.join(w.stateDir, 'consumer.json'))).toBe(false);
    expect(JSON.parse(readFileSync(path.join(w.dir, 'adopted.json'), 'utf8'))).toMatchObject({ into: w.stateDir, state: 'started' });
    const { ['adopted.json']: _marker, ...rest } = snapshot(w.dir);
    expect(rest).toEqual(before);

    w.connection!.kill('SIGKILL');
    await waitFor(() => gone(pid), { what: 'the stubborn 0.9 connection to be gone' });
    const done = await bridgeIn(w, ['--wait', '0']);
    expect(done.code, done.stderr).toBe(0);
    expect(done.stdout.trimEnd().split('\n')).toEqual([expect.stringContaining(w.sent[1]!.text)]);
    expect(done.stderr).toContain(`adopted the 0.9 bridge home ${w.dir}`);
    expect(done.stderr).not.toContain('was stopped first');
    await heldByOurConnection(w);
  });

  it('a home that is not live is not adopted: the run says so and leaves every file as it was', async () => {
    const w = await legacy.world({ count: 2, read: 1, leaseSeconds: 1 });
    await waitLapsed(w);
    const before = snapshot(w.dir);

    const r = await bridgeIn(w, ['--wait', '0']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain(
      `oh-hai bridge: found a 0.9 bridge home at ${w.dir}, but it is not live: its session ${w.session.id} is lapsed and no 0.9 connection is running; not adopted, and left exactly as it was`,
    );
    expect(snapshot(w.dir)).toEqual(before);
    expect(existsSync(path.join(w.stateDir, 'adopted-0.9.json'))).toBe(false);
    const own = await waitFor(() => sessionIdOf(w.stateDir), { timeoutMs: 40_000, what: 'a session of its own' });
    expect(own).not.toBe(w.session.id);
    expect(entryIdsIn(readSpool(w.stateDir)).filter((id) => w.sent.some((s) => s.entryId === id))).toEqual([]);
  });
});
