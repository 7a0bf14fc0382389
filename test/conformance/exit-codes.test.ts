import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/wait.js';
import type { PeerHub } from '../peer-hub/index.js';
import { attached, bridge, call, consumers, directive, enc, fatal, live, party, peerHub, startBridge, teardown, twin } from './world.js';

/**
 * The §0 status table against the peer Hub: each refusal the Hub may answer maps to the
 * bridge exit the table names. Every case also prints its stop line on stderr.
 */

afterEach(teardown);

const entryOf = (hub: PeerHub, messageId: string): string => hub.store.messages.get(messageId)!.entryId!;

describe('the bridge exit for each MA2H status', () => {
  it('401 unauthorized → 3 (before a session, and while streaming)', async () => {
    const hub = await peerHub();
    const a = party(hub, 'revoked');
    const run = startBridge(a, 'x', ['--wait', '30']);
    await attached(hub, a);
    expect((await call(hub, hub.humanToken, 'POST', `/v1/account/agents/${enc(a.id)}/revoke`)).status).toBe(200);
    const r = await run.done;
    expect(r.code, r.stderr).toBe(3);
    expect(r.stderr).toMatch(fatal(3));
    const again = await bridge(a, 'y', ['--wait', '30']);
    expect(again.code, again.stderr).toBe(3);
    expect(again.stdout).toBe('');
  });

  it('403 messaging_disabled → 3, and the message names the setting', async () => {
    const hub = await peerHub();
    const a = party(hub, 'muted');
    expect((await call(hub, hub.humanToken, 'PATCH', '/v1/account', { agent_messaging: false })).status).toBe(200);
    const r = await bridge(a, 'm', ['--wait', '30']);
    expect(r.code, r.stderr).toBe(3);
    expect(r.stderr).toMatch(fatal(3, 'messaging_disabled'));
    expect(r.stderr).toMatch(/agent messaging/i);
  });

  it('403 session_closed_by_operator → 14 while streaming; re-registering the name is refused (14) until lifted', async () => {
    const hub = await peerHub();
    const a = party(hub, 'stopped');
    const run = startBridge(a, 'op', ['--wait', '30']);
    const s = await attached(hub, a);
    expect((await call(hub, hub.humanToken, 'POST', `/v1/sessions/${enc(s.id)}/operator-close`)).status).toBe(200);
    const r = await run.done;
    expect(r.code, r.stderr).toBe(14);
    expect(r.stderr).toMatch(fatal(14));
    // The same agent on another machine, same session name: the Hub refuses the register (§9).
    const other = twin(a);
    const again = await bridge(other, 'op', ['--wait', '30']);
    expect(again.code, again.stderr).toBe(14);
    expect(hub.requests.filter((q) => q.route === 'sessions.create' && q.status === 403)).toHaveLength(1);
    expect((await call(hub, hub.humanToken, 'POST', '/v1/operator-stops/lift', { agent_id: a.id, name: 'op' })).status).toBe(200);
    const lifted = await bridge(twin(a), 'op', ['--wait', '0.5']);
    expect(lifted.code, lifted.stderr).toBe(0);
    await live(hub, a, 'op');
  });

  it('410 session_closed (the agent closed it) → 15, a stand-down, not a failure', async () => {
    const hub = await peerHub();
    const a = party(hub, 'closer');
    const run = startBridge(a, 'cl', ['--wait', '30']);
    const s = await attached(hub, a);
    expect((await call(hub, a.token, 'POST', `/v1/sessions/${enc(s.id)}/close`)).status).toBe(200);
    const r = await run.done;
    expect(r.code, r.stderr).toBe(15);
    expect(r.stderr).toMatch(/STOOD DOWN/);
  });

  it('404 for a pinned session → 4', async () => {
    const hub = await peerHub({ sessionIdPrefix: 'sess_' });
    const a = party(hub, 'pin404');
    const r = await bridge(a, 'ignored', ['--session', 'sess_no.such~session', '--wait', '30']);
    expect(r.code, r.stderr).toBe(4);
    expect(r.stderr).toMatch(fatal(4));
  });

  it('a pinned session works while active, and its lapse is 11', async () => {
    const hub = await peerHub({ sessionIdPrefix: 'sess_' });
    const a = party(hub, 'pinned');
    const created = await call(hub, a.token, 'POST', '/v1/sessions', { client_key: 'made-by-hand', lease_seconds: 600 });
    expect(created.status).toBe(201);
    const id = created.body.session.id as string;
    const d = entryOf(hub, await directive(hub, `agent:${a.id}#${id}`, 'to the pinned run'));
    const ok = await bridge(a, 'ignored', ['--session', id, '--wait', '10']);
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).toContain('"to the pinned run"');
    await waitFor(() => hub.store.entry(d)!.acknowledged, { what: 'acknowledged under the pinned session' });
    hub.store.lapseNow(id);
    const r = await bridge(a, 'ignored', ['--session', id, '--wait', '30']);
    expect(r.code, r.stderr).toBe(11);
    expect(r.stderr).toMatch(fatal(11));
  });

  it('a pinned session whose lease runs out while streaming → 11 (it is never replaced)', async () => {
    const hub = await peerHub({ sessionIdPrefix: 'sess_' });
    const a = party(hub, 'pinned-live');
    const created = await call(hub, a.token, 'POST', '/v1/sessions', { client_key: 'pinned-by-hand' });
    const id = created.body.session.id as string;
    const run = startBridge(a, 'ignored', ['--session', id, '--wait', '30']);
    await attached(hub, a);
    hub.store.lapseNow(id);
    const r = await run.done;
    expect(r.code, r.stderr).toBe(11);
    expect(hub.requests.filter((q) => q.route === 'sessions.create')).toHaveLength(1);
  });

  it('a pinned session that lapsed before the first run → 11', async () => {
    const hub = await peerHub({ sessionIdPrefix: 'sess_', leaseMinSeconds: 0.5 });
    const a = party(hub, 'lapsed');
    const created = await call(hub, a.token, 'POST', '/v1/sessions', { client_key: 'short', lease_seconds: 0.5 });
    const id = created.body.session.id as string;
    await waitFor(async () => (await call(hub, a.token, 'GET', `/v1/sessions/${enc(id)}`)).body.session.state === 'lapsed', { what: 'the lease to run out' });
    const r = await bridge(a, 'ignored', ['--session', id, '--wait', '30']);
    expect(r.code, r.stderr).toBe(11);
  });

  it('409 session_held (another home drains it) → 10, naming the holder', async () => {
    const hub = await peerHub();
    const a = party(hub, 'held');
    const run = startBridge(a, 'shared', ['--wait', '30']);
    const s = await attached(hub, a);
    const holder = consumers(a)[0]!.pid;
    const other = twin(a);
    const r = await bridge(other, 'shared', ['--wait', '30']);
    expect(r.code, r.stderr).toBe(10);
    expect(r.stderr).toMatch(fatal(10, 'session_held'));
    expect(r.stderr).toContain(String(holder));
    // The holder was left alone and still holds the same session.
    expect(s.state).toBe('active');
    expect(s.holder?.pid).toBe(holder);
    run.child.kill('SIGTERM');
    await run.done;
  });
});
