import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/wait.js';
import type { PeerHub } from '../peer-hub/index.js';
import { bridge, call, cli, consumers, directive, fatal, live, party, peerHub, sessionsOf, teardown, type Party } from './world.js';

/**
 * docs/conformance.md finding 1: MA2H ids are opaque (§0), so a --session / MA2H_SESSION_ID
 * value pins a Hub session whatever its shape. An id outside the name grammar can only be an
 * id; one that fits it is asked about (GET /v1/sessions/<value>) before anything registers.
 */

afterEach(teardown);

/** A Hub that mints session ids a session name could also be (the finding's `run.rivr4t6jdz`). */
function namelikeSessionIds(hub: PeerHub): void {
  const mint = hub.store.mint;
  const next = mint.next.bind(mint);
  mint.next = (kind, prefix) => (kind === 'session' ? `run.${randomBytes(5).toString('hex')}` : next(kind, prefix));
}

async function handMade(hub: PeerHub, a: Party): Promise<string> {
  const created = await call(hub, a.token, 'POST', '/v1/sessions', { client_key: 'made-by-hand', lease_seconds: 600 });
  expect(created.status).toBe(201);
  return created.body.session.id as string;
}

const creates = (hub: PeerHub) => hub.requests.filter((q) => q.route === 'sessions.create').length;

const sessionRecord = (a: Party): { id: string; pinned: boolean } => {
  const [c] = consumers(a);
  return JSON.parse(readFileSync(path.join(c!.dir, 'session.json'), 'utf8')) as { id: string; pinned: boolean };
};

describe('pinning a Hub session by its opaque id', () => {
  it('an id that fits the name grammar drains that session, never registers a second, and its lapse is 11', async () => {
    const hub = await peerHub();
    namelikeSessionIds(hub);
    const a = party(hub, 'namelike');
    const id = await handMade(hub, a);
    expect(id).toMatch(/^[A-Za-z0-9._:-]{1,64}$/);
    const d = await directive(hub, `agent:${a.id}#${id}`, 'to the pinned run');

    const r = await bridge(a, 'ignored', ['--session', id, '--wait', '10']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('"to the pinned run"');
    await waitFor(() => hub.store.entry(hub.store.messages.get(d)!.entryId!)!.acknowledged, { what: 'acknowledged under the pinned session' });
    expect(creates(hub)).toBe(1);
    expect(sessionsOf(hub, a).map((s) => s.id)).toEqual([id]);
    expect(sessionRecord(a)).toMatchObject({ id, pinned: true });

    const status = await cli(a, null, ['session', 'status', '--session', id]);
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toContain(`session ${id} · agent:${a.id}#${id}`);

    hub.store.lapseNow(id);
    const lapsed = await bridge(a, 'ignored', ['--session', id, '--wait', '30']);
    expect(lapsed.code, lapsed.stderr).toBe(11);
    expect(lapsed.stderr).toMatch(fatal(11));
    expect(creates(hub)).toBe(1);
  });

  it('an id outside the name grammar from MA2H_SESSION_ID pins it (no longer refused)', async () => {
    const hub = await peerHub();
    const a = party(hub, 'tilde');
    const id = await handMade(hub, a);
    expect(id).toMatch(/~/);
    await directive(hub, `agent:${a.id}#${id}`, 'to the tilde id');

    const r = await cli(a, null, ['bridge', '--wait', '10'], { env: { MA2H_SESSION_ID: id } });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('"to the tilde id"');
    expect(creates(hub)).toBe(1);
    expect(sessionRecord(a)).toMatchObject({ id, pinned: true });
  });

  it('an unknown id outside the name grammar is a pinned session that does not exist: 4, nothing registered', async () => {
    const hub = await peerHub();
    const a = party(hub, 'unknown-tilde');
    const r = await bridge(a, 'ignored', ['--session', 'no~such/session', '--wait', '30']);
    expect(r.code, r.stderr).toBe(4);
    expect(r.stderr).toMatch(fatal(4));
    expect(creates(hub)).toBe(0);
  });

  it('a value the Hub does not know (404) is a name: a new session registered under it', async () => {
    const hub = await peerHub();
    namelikeSessionIds(hub);
    const a = party(hub, 'plain-name');
    const r = await bridge(a, 'ignored', ['--session', 'run.notanid', '--wait', '0.5']);
    expect(r.code, r.stderr).toBe(0);
    const s = await live(hub, a, 'run.notanid');
    expect(s.id).not.toBe('run.notanid');
    expect(hub.requests.some((q) => q.route === 'sessions.get' && q.target.endsWith('/v1/sessions/run.notanid'))).toBe(true);
    expect(sessionRecord(a)).toMatchObject({ id: s.id, pinned: false });
  });

  it("another agent's session id is a name for this agent, never that session", async () => {
    const hub = await peerHub();
    namelikeSessionIds(hub);
    const other = party(hub, 'other');
    const theirs = await handMade(hub, other);
    const a = party(hub, 'mine');
    const r = await bridge(a, 'ignored', ['--session', theirs, '--wait', '0.5']);
    expect(r.code, r.stderr).toBe(0);
    const s = await live(hub, a, theirs);
    expect(s.id).not.toBe(theirs);
    expect(sessionsOf(hub, other).map((x) => x.seenAt)).toEqual([null]);
  });
});
