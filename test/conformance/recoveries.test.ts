import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/wait.js';
import { attached, bridge, call, consumers, directive, enc, fatal, live, party, peerHub, sessionsOf, startBridge, teardown } from './world.js';

/**
 * The rows of the §0 table that are not a refusal to stop on: genuine faults (5xx, network,
 * 429, too_many_sessions) spend the retry budget and end in 13; a lapsed unpinned session is
 * replaced without exiting; a replaced consumer stops quietly (§12).
 */

afterEach(teardown);

describe('faults spend the retry budget, then 13', () => {
  it('409 too_many_sessions → a 13-class fault with a clear message', async () => {
    const hub = await peerHub({ maxLivePerAgent: 3 });
    const a = party(hub, 'crowded');
    for (let i = 0; i < 3; i++) expect((await call(hub, a.token, 'POST', '/v1/sessions', { client_key: `k${i}` })).status).toBe(201);
    const r = await bridge(a, 'one-more', ['--max-retries', '1', '--wait', '30']);
    expect(r.code, r.stderr).toBe(13);
    expect(r.stderr).toMatch(/too_many_sessions|too many|live sessions/i);
  });

  it('5xx on every session request → 13 once --max-retries is spent', async () => {
    const hub = await peerHub();
    hub.knobs.fault = (q) => (q.route === 'capability' || q.route === 'whoami' ? null : { status: 503 });
    const a = party(hub, 'down');
    const r = await bridge(a, 'f', ['--max-retries', '2', '--wait', '30']);
    expect(r.code, r.stderr).toBe(13);
    expect(r.stderr).toMatch(fatal(13));
    const attempts = hub.requests.filter((q) => q.route === 'sessions.create').length;
    expect(attempts).toBeGreaterThanOrEqual(1);
    expect(attempts).toBeLessThanOrEqual(3);
  });

  it('5xx on stream connects after registering → 13; dropped connections count as faults too', async () => {
    for (const fault of [{ status: 500 }, { drop: 'before' as const }]) {
      const hub = await peerHub();
      const a = party(hub, 'flaky');
      expect((await bridge(a, 's', ['--max-retries', '1', '--wait', '0.5'])).code).toBe(0);
      await live(hub, a, 's');
      hub.knobs.fault = (q) => (q.route === 'inbox.stream' ? fault : null);
      const r = await bridge(a, 's', ['--wait', '30']);
      expect(r.code, `${JSON.stringify(fault)}: ${r.stderr}`).toBe(13);
    }
  });

  it('429 rate_limited counts as a fault: always limited → 13', async () => {
    const hub = await peerHub();
    hub.knobs.fault = (q) => (q.route === 'sessions.create' ? { status: 429, code: 'rate_limited', retryAfterSeconds: 0 } : null);
    const a = party(hub, 'limited');
    const r = await bridge(a, 'rl', ['--max-retries', '1', '--wait', '30']);
    expect(r.code, r.stderr).toBe(13);
  });
});

describe('what the table says the bridge does without exiting', () => {
  it('410 session_lapsed unpinned: a new session is registered and the address change is printed', async () => {
    const hub = await peerHub();
    const a = party(hub, 'renewed');
    const run = startBridge(a, 'lap', ['--wait', '30']);
    const old = await attached(hub, a);
    hub.store.lapseNow(old.id);
    const fresh = await live(hub, a, 'lap');
    expect(fresh.id).not.toBe(old.id);
    // An address change alone is not mail: the run would wait out its 30 s. Mail to the new
    // address ends it, printed after the change (the connection spools the change on registering).
    await directive(hub, `agent:${a.id}#${fresh.id}`, 'to the new address');
    const r = await run.done;
    expect(r.code, r.stderr).toBe(0);
    const change = r.stdout.indexOf(`address changed (session_lapsed): agent:${a.id}#${old.id} → agent:${a.id}#${fresh.id}`);
    expect(change, r.stdout).toBeGreaterThanOrEqual(0);
    expect(r.stdout.indexOf('"to the new address"'), r.stdout).toBeGreaterThan(change);
  });

  it('after the session is replaced, entries that arrived under the old one are acked without naming it (§12)', async () => {
    const hub = await peerHub();
    const a = party(hub, 'moved');
    expect((await bridge(a, 'mv', ['--wait', '0.5'])).code).toBe(0);
    const old = await attached(hub, a);
    const toOld = await directive(hub, `agent:${a.id}#${old.id}`, 'to the old address');
    const toPrincipal = await directive(hub, a.address, 'to the agent');
    const ids = [toOld, toPrincipal].map((m) => hub.store.messages.get(m)!.entryId!);
    await waitFor(() => ids.every((id) => hub.store.entry(id)!.delivered), { what: 'both spooled under the old session' });
    const lapsedAt = hub.requests.length;
    hub.store.lapseNow(old.id);
    const fresh = await waitFor(() => sessionsOf(hub, a).find((x) => x.state === 'active'), { what: 'the replacement session' });
    const r = await bridge(a, 'mv', ['--wait', '10']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('"to the old address"');
    expect(r.stdout).toContain('"to the agent"');
    // The principal entry is live mail: it must end acknowledged at the Hub.
    await waitFor(() => hub.store.entry(ids[1]!)!.acknowledged, { what: 'the principal directive acknowledged' });
    const acksSince = hub.requests.slice(lapsedAt).filter((q) => q.route === 'inbox.ack');
    expect(acksSince.length).toBeGreaterThan(0);
    expect(acksSince.filter((q) => q.body?.session === old.id || q.status === 410)).toEqual([]);
    expect(fresh.state).toBe('active');
  });

  it('event: closed {"reason":"replaced"} stops the connection quietly with exit 0 and stop reason replaced', async () => {
    const hub = await peerHub();
    const a = party(hub, 'replaced');
    expect((await bridge(a, 'rp', ['--wait', '0.5'])).code).toBe(0);
    const s = await attached(hub, a);
    const home = s.holder!.home;
    // The holder's own home from another pid: its stream is told it was replaced (§12).
    const successor = await fetch(`${hub.url}/v1/inbox?session=${enc(s.id)}`, {
      headers: { authorization: `Bearer ${a.token}`, 'ma2h-consumer': `home=${home}; host=elsewhere; pid=999999` },
    });
    expect(successor.status).toBe(200);
    await waitFor(() => consumers(a)[0]?.state === 'stopped', { what: 'the replaced connection to stop' });
    const c = consumers(a)[0]!;
    expect([c.exit_code, c.stop_reason]).toEqual([0, 'replaced']);
  });
});
