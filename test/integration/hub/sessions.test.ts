import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hubCall, startHub, type TestHub } from '../../helpers/hub.js';
import { waitFor } from '../../helpers/wait.js';
import { openSse } from './sse.js';

const consumer = (home: string, pid: number) => ({ 'ma2h-consumer': `home=${home}; host=box-${home}; pid=${pid}` });

// Sessions (§3): register/adopt/takeover, leases and lapse, the holder rule, the
// 16-session limit, the operator kill-switch and its lift.
describe('reference Hub: sessions', () => {
  let hub: TestHub;
  let agent: { id: string; token: string };
  let other: { id: string; token: string };

  beforeAll(async () => {
    hub = await startHub({
      // The holder stays seen for 3 s: each 409 below must reach the Hub within that of the
      // holder's last request (at 1 s, two requests took up to 336 ms at load 10).
      args: ['--lease-min-seconds', '0.5', '--lease-default-seconds', '30', '--holder-stale-seconds', '3', '--stream-max-hold-seconds', '20'],
    });
    agent = await hub.mintAgent('sessions-agent');
    other = await hub.mintAgent('other-agent');
  });
  afterAll(async () => {
    await hub.dispose();
  });

  const register = (body: Record<string, unknown>, token = agent.token) => hubCall(hub, 'POST', '/v1/sessions', { token, body });

  it('registers a session with the full Session shape and clamps the lease to the advertised bounds', async () => {
    const r = await register({ client_key: 'ck-shape', lease_seconds: 99_999 });
    expect(r.status).toBe(201);
    const s = r.body.session;
    expect(s).toMatchObject({
      agent_id: agent.id,
      address: `agent:${agent.id}#${s.id}`,
      name: null,
      state: 'active',
      lease_seconds: 3600,
      closed_at: null,
      holder: null,
    });
    expect(s.id).toMatch(/^sess_/);
    expect(Date.parse(s.expires_at) - Date.parse(s.last_renewed_at)).toBe(3600 * 1000);
    const small = await register({ client_key: 'ck-small', lease_seconds: 0.1 });
    expect(small.body.session.lease_seconds).toBe(0.5);
    const dflt = await register({ client_key: 'ck-default' });
    expect(dflt.body.session.lease_seconds).toBe(30);
  });

  it('creates a new session for a client_key alone, every time', async () => {
    const a = await register({ client_key: 'ck-same' });
    const b = await register({ client_key: 'ck-same' });
    expect([a.status, b.status]).toEqual([201, 201]);
    expect(a.body.session.id).not.toBe(b.body.session.id);
  });

  it('adopts a named session from the holder home (200), refuses another home while the holder is seen (409), then lets it take over', async () => {
    const first = await register({ client_key: 'ck-n1', name: 'builder-1', home: 'homeA', host: 'hostA', pid: 11, lease_seconds: 10 });
    expect(first.status).toBe(201);
    const id = first.body.session.id;
    expect(first.body.session.holder).toMatchObject({ home: 'homeA', host: 'hostA', pid: 11 });
    const adopted = await register({ client_key: 'ck-n1b', name: 'builder-1', home: 'homeA', host: 'hostA', pid: 12, lease_seconds: 20 });
    expect(adopted.status).toBe(200);
    expect(adopted.body.session.id).toBe(id);
    expect(adopted.body.session.lease_seconds).toBe(20);
    const held = await register({ client_key: 'ck-n1c', name: 'builder-1', home: 'homeB', host: 'hostB', pid: 13 });
    expect(held.status).toBe(409);
    expect(held.body.error.code).toBe('session_held');
    expect(held.body.error.holder).toMatchObject({ home: 'homeA', host: 'hostA', pid: 11 });
    expect(typeof held.body.error.holder.since).toBe('string');
    // Once the holder has not been seen for --holder-stale-seconds, another home takes over (200, same session).
    const taken = await waitFor(async () => {
      const r = await register({ client_key: 'ck-n1c', name: 'builder-1', home: 'homeB', host: 'hostB', pid: 13 });
      return r.status === 200 ? r : null;
    });
    expect(taken.body.session.id).toBe(id);
    expect(taken.body.session.holder).toMatchObject({ home: 'homeB', pid: 13 });
  });

  it('reads a session without renewing it; a drain renews it', async () => {
    const s = (await register({ client_key: 'ck-renew', lease_seconds: 30 })).body.session;
    const read = await hubCall(hub, 'GET', `/v1/sessions/${s.id}`, { token: agent.token });
    expect(read.body.session.expires_at).toBe(s.expires_at);
    const drained = await waitFor(async () => {
      const d = await hubCall(hub, 'GET', `/v1/inbox?session=${s.id}`, { token: agent.token });
      return d.body.session.expires_at > s.expires_at ? d : null;
    });
    expect(drained.body.session).toEqual({ id: s.id, expires_at: drained.body.session.expires_at, lease_seconds: 30 });
    expect((await hubCall(hub, 'GET', `/v1/sessions/${s.id}`, { token: agent.token })).body.session.expires_at).toBe(drained.body.session.expires_at);
  });

  it("answers 404 session_not_found for an unknown id and for another agent's session", async () => {
    const s = (await register({ client_key: 'ck-404' })).body.session;
    for (const r of [
      await hubCall(hub, 'GET', '/v1/sessions/sess_nope', { token: agent.token }),
      await hubCall(hub, 'GET', `/v1/sessions/${s.id}`, { token: other.token }),
      await hubCall(hub, 'GET', `/v1/inbox?session=${s.id}`, { token: other.token }),
      await hubCall(hub, 'POST', `/v1/sessions/${s.id}/close`, { token: other.token }),
    ]) {
      expect(r.status).toBe(404);
      expect(r.body.error.code).toBe('session_not_found');
    }
  });

  it('closes a session idempotently; presenting it afterwards is 410 session_closed', async () => {
    const s = (await register({ client_key: 'ck-close' })).body.session;
    const closed = await hubCall(hub, 'POST', `/v1/sessions/${s.id}/close`, { token: agent.token });
    expect(closed.body.session.state).toBe('closed');
    expect(typeof closed.body.session.closed_at).toBe('string');
    const again = await hubCall(hub, 'POST', `/v1/sessions/${s.id}/close`, { token: agent.token });
    expect(again.status).toBe(200);
    expect(again.body.session).toEqual(closed.body.session);
    const drain = await hubCall(hub, 'GET', `/v1/inbox?session=${s.id}`, { token: agent.token });
    expect(drain.status).toBe(410);
    expect(drain.body.error).toMatchObject({ code: 'session_closed', state: 'closed' });
    const ack = await hubCall(hub, 'POST', '/v1/inbox/ack', { token: agent.token, body: { session: s.id, acknowledged: [] } });
    expect(ack.status).toBe(410);
  });

  it('lapses a session once the Hub clock passes expires_at: 410 session_lapsed, and it leaves the fleet', async () => {
    const s = (await register({ client_key: 'ck-lapse', lease_seconds: 0.5 })).body.session;
    const lapsed = await waitFor(async () => {
      const r = await hubCall(hub, 'GET', `/v1/sessions/${s.id}`, { token: agent.token });
      return r.body.session.state === 'lapsed' ? r : null;
    });
    expect(lapsed.body.session.closed_at).toBe(s.expires_at);
    const drain = await hubCall(hub, 'GET', `/v1/inbox?session=${s.id}`, { token: agent.token });
    expect(drain.status).toBe(410);
    expect(drain.body.error.code).toBe('session_lapsed');
    const fleet = await hubCall(hub, 'GET', '/v1/fleet', { token: agent.token });
    expect(fleet.body.sessions.some((r: { session_id: string }) => r.session_id === s.id)).toBe(false);
  });

  it('keeps one consumer per session: another home is 409 with the holder, the same home replaces it and the old stream hears "replaced"', async () => {
    const s = (await register({ client_key: 'ck-holder' })).body.session;
    const drainAs = (headers: Record<string, string>) => hubCall(hub, 'GET', `/v1/inbox?session=${s.id}`, { token: agent.token, headers });
    expect((await drainAs(consumer('h1', 100))).status).toBe(200);
    const held = await drainAs(consumer('h2', 200));
    expect(held.status).toBe(409);
    expect(held.body.error.code).toBe('session_held');
    expect(held.body.error.holder).toMatchObject({ home: 'h1', host: 'box-h1', pid: 100 });
    expect(typeof held.body.error.holder.last_seen_at).toBe('string');
    // No MA2H-Consumer header: not a consumer, no holder check.
    expect((await drainAs({})).status).toBe(200);
    const stream = await openSse(`${hub.url}/v1/inbox/stream?session=${s.id}`, { token: agent.token, headers: consumer('h1', 101) });
    expect(stream.status).toBe(200);
    await stream.next((e) => e.event === 'open');
    // An open stream keeps the holder seen, so another home stays refused.
    expect((await drainAs(consumer('h2', 200))).status).toBe(409);
    expect((await drainAs(consumer('h1', 102))).status).toBe(200);
    const closed = await stream.next((e) => e.event === 'closed');
    expect(JSON.parse(closed.data)).toEqual({ reason: 'replaced' });
    await stream.ended;
    const now = await hubCall(hub, 'GET', `/v1/sessions/${s.id}`, { token: agent.token });
    expect(now.body.session.holder).toMatchObject({ home: 'h1', pid: 102 });
  });

  it('allows at most 16 live sessions per agent', async () => {
    const third = await hub.mintAgent('limit');
    const ids: string[] = [];
    for (let i = 0; i < 16; i++) {
      const r = await register({ client_key: `ck-limit-${i}` }, third.token);
      expect(r.status).toBe(201);
      ids.push(r.body.session.id);
    }
    const refused = await register({ client_key: 'ck-limit-16' }, third.token);
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe('too_many_sessions');
    await hubCall(hub, 'POST', `/v1/sessions/${ids[0]}/close`, { token: third.token });
    expect((await register({ client_key: 'ck-limit-16' }, third.token)).status).toBe(201);
  });

  it('operator close: closed_by_operator, the open stream hears it, re-registering is 403 until lifted', async () => {
    const s = (await register({ client_key: 'ck-op', name: 'op-run' })).body.session;
    const stream = await openSse(`${hub.url}/v1/inbox/stream?session=${s.id}`, { token: agent.token });
    await stream.next((e) => e.event === 'open');
    const closed = await hubCall(hub, 'POST', `/v1/sessions/${s.id}/operator-close`, { token: hub.humanToken });
    expect(closed.status).toBe(200);
    expect(closed.body.session.state).toBe('closed_by_operator');
    expect(JSON.parse((await stream.next((e) => e.event === 'closed')).data)).toEqual({ reason: 'closed_by_operator' });
    await stream.ended;

    const again = await register({ client_key: 'ck-op' });
    expect(again.status).toBe(403);
    expect(again.body.error.code).toBe('session_closed_by_operator');
    expect((await register({ client_key: 'ck-other', name: 'op-run' })).status).toBe(403);
    expect((await register({ client_key: 'ck-other', name: 'another-name' })).status).toBe(201);
    const drain = await hubCall(hub, 'GET', `/v1/inbox?session=${s.id}`, { token: agent.token });
    expect(drain.status).toBe(403);
    expect(drain.body.error.code).toBe('session_closed_by_operator');
    expect((await hubCall(hub, 'POST', `/v1/sessions/${s.id}/operator-close`, { token: agent.token })).status).toBe(403);

    const stops = await hubCall(hub, 'GET', '/v1/operator-stops', { token: hub.humanToken });
    expect(stops.body.stops).toContainEqual(expect.objectContaining({ agent_id: agent.id, client_key: 'ck-op', name: 'op-run', session_id: s.id }));
    const lifted = await hubCall(hub, 'POST', '/v1/operator-stops/lift', { token: hub.humanToken, body: { agent_id: agent.id, client_key: 'ck-op' } });
    expect(lifted.body.lifted).toBe(1);
    expect((await register({ client_key: 'ck-op', name: 'op-run' })).status).toBe(201);
    const unknown = await hubCall(hub, 'POST', '/v1/operator-stops/lift', { token: hub.humanToken, body: { agent_id: 'agt_nobody' } });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe('agent_not_found');
    expect((await hubCall(hub, 'POST', '/v1/sessions/sess_nope/operator-close', { token: hub.humanToken })).status).toBe(404);
  });
});
