import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHub, type TestHub } from '../helpers/hub.js';
import { waitFor } from '../helpers/wait.js';
import { call, consumerHeader, enc, expectEntryShape, openSse, registerSession, verifyDelivery, type Body } from '../peer-hub/client.js';
import { startPeerHub, type PeerHub } from '../peer-hub/index.js';

/**
 * The same wire checks, each derived from one sentence of MA2H.md, run against the peer Hub
 * and against our reference Hub (`oh-hai hub serve`, driven as a black box over HTTP). A check
 * that fails only for the reference Hub is a place where it disagrees with the text.
 */

interface Target {
  url: string;
  signingKey: string;
  human: string;
  streamPath: string;
  close(): Promise<void>;
}

const KNOBS = { leaseMin: 1, hold: 5, keepalive: 0.2, maxWait: 2 };

async function peer(): Promise<Target> {
  const h: PeerHub = await startPeerHub({
    leaseMinSeconds: KNOBS.leaseMin,
    streamMaxHoldSeconds: KNOBS.hold,
    keepaliveSeconds: KNOBS.keepalive,
    maxWaitSeconds: KNOBS.maxWait,
  });
  return { url: h.url, signingKey: h.knobs.signingKey, human: h.humanToken, streamPath: h.knobs.streamPath!, close: () => h.close() };
}

async function reference(): Promise<Target> {
  const h: TestHub = await startHub({
    args: [
      '--lease-min-seconds',
      String(KNOBS.leaseMin),
      '--stream-max-hold-seconds',
      String(KNOBS.hold),
      '--keepalive-seconds',
      String(KNOBS.keepalive),
      '--max-wait-seconds',
      String(KNOBS.maxWait),
    ],
  });
  const cap = await call(h, null, 'GET', '/v1/capability');
  return { url: h.url, signingKey: h.signingKey, human: h.humanToken, streamPath: cap.body.inbound.stream_url as string, close: () => h.dispose() };
}

describe.each([
  ['the peer Hub', peer],
  ['the reference Hub', reference],
] as const)('MA2H wire checks against %s', (_name, start) => {
  let hub: Target;
  beforeAll(async () => {
    hub = await start();
  });
  afterAll(async () => {
    await hub?.close();
  });

  const mint = async (label = 'wire'): Promise<{ id: string; token: string; address: string }> => {
    const r = await call(hub, hub.human, 'POST', '/v1/account/agents', { label });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    return { id: r.body.agent.id as string, token: r.body.token as string, address: `agent:${r.body.agent.id as string}` };
  };
  const drain = (token: string, session: string, headers: Record<string, string> = {}) =>
    call(hub, token, 'GET', `/v1/inbox?session=${enc(session)}`, undefined, headers);
  const entriesOf = (r: { body: Body }): Body[] => (r.body.messages as Body[]).map((d) => d.entry as Body);

  it('§1 capability: MA2H ≥ 0.5 with session_param, the configured (fractional) numbers, no auth needed', async () => {
    const r = await call(hub, null, 'GET', '/v1/capability');
    expect(r.status).toBe(200);
    expect(r.body.protocol).toBe('MA2H');
    expect(r.body.inbound).toMatchObject({ session_param: true, stream_max_hold_seconds: KNOBS.hold, keepalive_seconds: KNOBS.keepalive });
    expect(r.body.signature_algs).toContain('hmac-sha256');
    expect(r.body.session.lease_min_seconds).toBe(KNOBS.leaseMin);
  });

  it('§0/§12 errors: 401 unauthorized with the error shape, 403 forbidden for the wrong kind of token, 404 not_found, 405 method_not_allowed', async () => {
    const a = await mint();
    const none = await call(hub, null, 'GET', '/v1/whoami');
    expect([none.status, none.body.error?.code, typeof none.body.error?.message]).toEqual([401, 'unauthorized', 'string']);
    expect((await call(hub, hub.human, 'POST', '/v1/sessions', { client_key: 'k' })).body.error?.code).toBe('forbidden');
    expect((await call(hub, a.token, 'POST', '/v1/directives', { to: a.address, text: 'x' })).body.error?.code).toBe('forbidden');
    const missing = await call(hub, a.token, 'GET', '/v1/no-such-endpoint');
    expect([missing.status, missing.body.error?.code]).toEqual([404, 'not_found']);
    const method = await call(hub, a.token, 'DELETE', '/v1/whoami');
    expect([method.status, method.body.error?.code]).toEqual([405, 'method_not_allowed']);
  });

  it('§3/§12 register: name adopts from the holder home (200, new lease applied), is 409 session_held from another home, client_key alone always creates', async () => {
    const a = await mint();
    const s = await registerSession(hub, a.token, { client_key: 'k1', name: 'n1', home: 'home-a', host: 'h', pid: 1, lease_seconds: 30 });
    expect(s).toMatchObject({ state: 'active', name: 'n1', lease_seconds: 30, address: `agent:${a.id}#${s.id}` });
    expect((await drain(a.token, s.id, consumerHeader('home-a'))).status).toBe(200);
    const adopted = await call(hub, a.token, 'POST', '/v1/sessions', { client_key: 'k2', name: 'n1', home: 'home-a', host: 'h', pid: 2, lease_seconds: 40 });
    expect([adopted.status, adopted.body.session?.id, adopted.body.session?.lease_seconds]).toEqual([200, s.id, 40]);
    const held = await call(hub, a.token, 'POST', '/v1/sessions', { client_key: 'k3', name: 'n1', home: 'home-b', host: 'h', pid: 3 });
    expect([held.status, held.body.error?.code]).toEqual([409, 'session_held']);
    expect(Object.keys(held.body.error.holder as Body).sort()).toEqual(['home', 'host', 'last_seen_at', 'pid', 'since']);
    const k1 = await call(hub, a.token, 'POST', '/v1/sessions', { client_key: 'same' });
    const k2 = await call(hub, a.token, 'POST', '/v1/sessions', { client_key: 'same' });
    expect([k1.status, k2.status]).toEqual([201, 201]);
    expect(k1.body.session.id).not.toBe(k2.body.session.id);
    expect((await call(hub, a.token, 'POST', '/v1/sessions', { client_key: 'k', name: 'bad name' })).body.error?.code).toBe('invalid_request');
  });

  it('§3/§12 GET does not renew; closing twice is 200 with the session unchanged; presenting a closed session is 410 session_closed with its state', async () => {
    const a = await mint();
    const s = await registerSession(hub, a.token);
    const got = await call(hub, a.token, 'GET', `/v1/sessions/${enc(s.id)}`);
    expect(got.body.session.expires_at).toBe(s.expires_at);
    const closed = await call(hub, a.token, 'POST', `/v1/sessions/${enc(s.id)}/close`);
    expect(closed.body.session.state).toBe('closed');
    const again = await call(hub, a.token, 'POST', `/v1/sessions/${enc(s.id)}/close`);
    expect([again.status, again.body.session.state, again.body.session.closed_at]).toEqual([200, 'closed', closed.body.session.closed_at]);
    const d = await drain(a.token, s.id);
    expect([d.status, d.body.error?.code, d.body.error?.state]).toEqual([410, 'session_closed', 'closed']);
    const other = await mint();
    expect((await call(hub, other.token, 'GET', `/v1/sessions/${enc(s.id)}`)).body.error?.code).toBe('session_not_found');
  });

  it('§3 a lease runs out on the Hub clock: lapsed, then 410 session_lapsed', async () => {
    const a = await mint();
    const s = await registerSession(hub, a.token, { lease_seconds: 1 });
    await waitFor(async () => (await call(hub, a.token, 'GET', `/v1/sessions/${enc(s.id)}`)).body.session.state === 'lapsed', { what: 'the lapse' });
    expect((await drain(a.token, s.id)).body.error?.code).toBe('session_lapsed');
  });

  it('§3 at most 16 live sessions: the 17th is 409 too_many_sessions', async () => {
    const a = await mint();
    for (let i = 0; i < 16; i++) await registerSession(hub, a.token);
    expect((await call(hub, a.token, 'POST', '/v1/sessions', { client_key: 'seventeenth' })).body.error?.code).toBe('too_many_sessions');
  });

  it('§9 operator close refuses re-registering by client_key and by name until lifted', async () => {
    const a = await mint();
    const s = await registerSession(hub, a.token, { client_key: 'ck', name: 'nm' });
    expect((await call(hub, hub.human, 'POST', `/v1/sessions/${enc(s.id)}/operator-close`)).body.session?.state).toBe('closed_by_operator');
    const d = await drain(a.token, s.id);
    expect([d.status, d.body.error?.code]).toEqual([403, 'session_closed_by_operator']);
    expect((await call(hub, a.token, 'POST', '/v1/sessions', { client_key: 'ck' })).body.error?.code).toBe('session_closed_by_operator');
    expect((await call(hub, a.token, 'POST', '/v1/sessions', { client_key: 'fresh', name: 'nm' })).body.error?.code).toBe('session_closed_by_operator');
    expect((await call(hub, hub.human, 'POST', '/v1/operator-stops/lift', { agent_id: a.id, client_key: 'ck', name: 'nm' })).status).toBe(200);
    expect((await call(hub, a.token, 'POST', '/v1/sessions', { client_key: 'ck', name: 'nm' })).status).toBe(201);
  });

  it('§4/§12 first-claim-wins, release on close, signed afresh per delivery; §6 acks', async () => {
    const a = await mint();
    const s1 = await registerSession(hub, a.token);
    const s2 = await registerSession(hub, a.token);
    expect((await call(hub, hub.human, 'POST', '/v1/directives', { to: a.address, text: 'to the principal' })).status).toBe(202);
    const first = await drain(a.token, s1.id);
    expect(entriesOf(first)).toHaveLength(1);
    expect(first.body.session).toMatchObject({ id: s1.id });
    expect(typeof first.body.session.expires_at).toBe('string');
    const id = entriesOf(first)[0]!.id as string;
    expect(entriesOf(await drain(a.token, s2.id))).toHaveLength(0);
    expect(entriesOf(await call(hub, a.token, 'GET', '/v1/inbox'))).toHaveLength(0);
    const again = await drain(a.token, s1.id);
    const sig1 = verifyDelivery(hub, first.body.messages[0]);
    const sig2 = verifyDelivery(hub, again.body.messages[0]);
    expect(entriesOf(again)[0]!.id).toBe(id);
    expect(sig2.jti).not.toBe(sig1.jti);
    const delivered = await call(hub, a.token, 'POST', '/v1/inbox/ack', { session: s1.id, delivered: [id, 'no-such-entry'] });
    expect(delivered.body).toMatchObject({ delivered: 1, unknown: ['no-such-entry'], session: { id: s1.id } });
    expect(entriesOf(await drain(a.token, s1.id))).toHaveLength(1);
    await call(hub, a.token, 'POST', `/v1/sessions/${enc(s1.id)}/close`);
    expect(entriesOf(await call(hub, a.token, 'GET', '/v1/inbox'))).toHaveLength(1);
    expect(entriesOf(await drain(a.token, s2.id))).toHaveLength(1);
    expect((await call(hub, a.token, 'POST', '/v1/inbox/ack', { session: s1.id, acknowledged: [id] })).status).toBe(410);
    expect((await call(hub, a.token, 'POST', '/v1/inbox/ack', { acknowledged: [id] })).body).toMatchObject({ acknowledged: 1, unknown: [] });
    expect((await call(hub, a.token, 'POST', '/v1/inbox/ack', { acknowledged: [id] })).status).toBe(200);
    expect(entriesOf(await drain(a.token, s2.id))).toHaveLength(0);
  });

  it('§8/§12 receipts: acknowledged without prior, bounced with prior and reason; from is the original to', async () => {
    const a = await mint();
    const b = await mint();
    const sa = await registerSession(hub, a.token);
    const sb = await registerSession(hub, b.token);
    const n1 = await call(hub, a.token, 'POST', '/v1/messages', { to: sb.address, intent: 'notify', text: 'one', session: sa.id });
    expect([n1.status, n1.body.message.state, n1.body.session?.id]).toEqual([202, 'queued', sa.id]);
    const got = entriesOf(await drain(b.token, sb.id));
    await call(hub, b.token, 'POST', '/v1/inbox/ack', { session: sb.id, acknowledged: [got[0]!.id] });
    await call(hub, a.token, 'POST', '/v1/messages', { to: sb.address, intent: 'notify', text: 'two', session: sa.id });
    await call(hub, b.token, 'POST', `/v1/sessions/${enc(sb.id)}/close`);
    const atA = entriesOf(await drain(a.token, sa.id));
    for (const e of atA) expectEntryShape(e);
    const [ack, bounce] = atA.filter((e) => e.kind === 'receipt');
    expect(ack).toMatchObject({ status: 'acknowledged', message_id: n1.body.message.id, from: sb.address, to: sa.address });
    expect('prior' in ack!).toBe(false);
    expect(bounce).toMatchObject({ status: 'bounced', prior: 'queued', reason: 'session_closed', from: sb.address });
  });

  it('§8/§12 respond: 201 response to the asker session; already_responded; not_respondable; a response to an ended asker bounces at once', async () => {
    const a = await mint();
    const b = await mint();
    const sa = await registerSession(hub, a.token);
    const ask = await call(hub, a.token, 'POST', '/v1/messages', { to: b.address, intent: 'ask', text: 'q?', session: sa.id });
    const resp = await call(hub, b.token, 'POST', `/v1/messages/${enc(ask.body.message.id)}/respond`, { text: 'a!' });
    expect([resp.status, resp.body.message?.intent, resp.body.message?.to]).toEqual([201, 'response', sa.address]);
    const atA = entriesOf(await drain(a.token, sa.id)).find((e) => e.kind === 'response');
    expect(atA).toMatchObject({ in_reply_to: ask.body.message.id, message_id: resp.body.message.id, text: 'a!' });
    expect((await call(hub, b.token, 'POST', `/v1/messages/${enc(ask.body.message.id)}/respond`, { text: 'again' })).body.error?.code).toBe(
      'already_responded',
    );
    const notify = await call(hub, a.token, 'POST', '/v1/messages', { to: b.address, intent: 'notify', text: 'fyi' });
    expect((await call(hub, b.token, 'POST', `/v1/messages/${enc(notify.body.message.id)}/respond`, { text: 'x' })).body.error?.code).toBe('not_respondable');
    const ask2 = await call(hub, a.token, 'POST', '/v1/messages', { to: b.address, intent: 'task', text: 't', session: sa.id });
    await call(hub, a.token, 'POST', `/v1/sessions/${enc(sa.id)}/close`);
    const late = await call(hub, b.token, 'POST', `/v1/messages/${enc(ask2.body.message.id)}/respond`, { text: 'too late' });
    expect(late.status).toBe(201);
    const track = await call(hub, b.token, 'GET', `/v1/messages/${enc(late.body.message.id)}`);
    expect([track.body.message.state, track.body.message.prior]).toEqual(['bounced', 'queued']);
    const receipt = entriesOf(await call(hub, b.token, 'GET', '/v1/inbox')).find((e) => e.kind === 'receipt' && e.message_id === late.body.message.id);
    expect(receipt).toMatchObject({ status: 'bounced', prior: 'queued', reason: 'session_closed' });
  });

  it('§12 messaging_disabled refuses create, drains, streams, sends and respond; acks, reads, close, principal drain and directives still work', async () => {
    const a = await mint();
    const b = await mint();
    const s = await registerSession(hub, a.token);
    const ask = await call(hub, b.token, 'POST', '/v1/messages', { to: a.address, intent: 'ask', text: 'q' });
    const off = await call(hub, hub.human, 'PATCH', '/v1/account', { agent_messaging: false });
    expect(off.status).toBe(200);
    try {
      const refused = [
        await call(hub, a.token, 'POST', '/v1/sessions', { client_key: 'k' }),
        await drain(a.token, s.id),
        await call(hub, a.token, 'GET', `${hub.streamPath}?session=${enc(s.id)}`, undefined, { accept: 'text/event-stream' }),
        await call(hub, a.token, 'POST', '/v1/messages', { to: b.address, intent: 'notify', text: 'x' }),
        await call(hub, a.token, 'POST', `/v1/messages/${enc(ask.body.message.id)}/respond`, { text: 'x' }),
      ];
      expect(refused.map((r) => [r.status, r.body.error?.code])).toEqual(refused.map(() => [403, 'messaging_disabled']));
      const principal = await call(hub, a.token, 'GET', '/v1/inbox');
      expect(principal.status).toBe(200);
      const entry = entriesOf(principal)[0]!;
      expect((await call(hub, a.token, 'POST', '/v1/inbox/ack', { acknowledged: [entry.id] })).status).toBe(200);
      expect((await call(hub, a.token, 'GET', `/v1/sessions/${enc(s.id)}`)).status).toBe(200);
      expect((await call(hub, a.token, 'GET', `/v1/messages/${enc(ask.body.message.id)}`)).status).toBe(200);
      expect((await call(hub, hub.human, 'POST', '/v1/directives', { to: a.address, text: 'still works' })).status).toBe(202);
      expect((await call(hub, a.token, 'POST', `/v1/sessions/${enc(s.id)}/close`)).status).toBe(200);
    } finally {
      await call(hub, hub.human, 'PATCH', '/v1/account', { agent_messaging: true });
    }
  });

  it('§8/§12 sends: 404 recipient_not_found, 410 session_<state> with state to a session that ended, text_too_long counted in bytes, snapshot unknown before any drain', async () => {
    const a = await mint();
    const b = await mint();
    const sb = await registerSession(hub, b.token);
    const fresh = await call(hub, a.token, 'POST', '/v1/messages', { to: sb.address, intent: 'notify', text: 'é'.repeat(32_768) });
    expect([fresh.status, fresh.body.message.destination]).toEqual([202, { address: sb.address, snapshot: 'unknown' }]);
    const long = await call(hub, a.token, 'POST', '/v1/messages', { to: sb.address, intent: 'notify', text: 'é'.repeat(32_769) });
    expect([long.status, long.body.error?.code]).toEqual([400, 'text_too_long']);
    expect((await call(hub, a.token, 'POST', '/v1/messages', { to: `agent:${b.id}-nobody`, intent: 'notify', text: 'x' })).body.error?.code).toBe(
      'recipient_not_found',
    );
    await call(hub, b.token, 'POST', `/v1/sessions/${enc(sb.id)}/close`);
    const ended = await call(hub, a.token, 'POST', '/v1/messages', { to: sb.address, intent: 'notify', text: 'x' });
    expect([ended.status, ended.body.error?.code, ended.body.error?.state]).toEqual([410, 'session_closed', 'closed']);
  });

  it('§8 idempotency: same key and body → 200 idempotent_replay; same key, other body → 409 idempotency_conflict', async () => {
    const a = await mint();
    const b = await mint();
    const body = { to: b.address, intent: 'notify', text: 'once', idempotency_key: 'idem-1' };
    const first = await call(hub, a.token, 'POST', '/v1/messages', body);
    const replay = await call(hub, a.token, 'POST', '/v1/messages', body);
    expect([replay.status, replay.body.idempotent_replay, replay.body.message.id]).toEqual([200, true, first.body.message.id]);
    expect((await call(hub, a.token, 'POST', '/v1/messages', { ...body, text: 'twice' })).body.error?.code).toBe('idempotency_conflict');
  });

  it('§12 GET /v1/messages defaults to sent, newest first, with an opaque before cursor', async () => {
    const a = await mint();
    const b = await mint();
    const ids: string[] = [];
    for (const t of ['1', '2', '3'])
      ids.push((await call(hub, a.token, 'POST', '/v1/messages', { to: b.address, intent: 'notify', text: t })).body.message.id as string);
    const page = await call(hub, a.token, 'GET', '/v1/messages?limit=2');
    expect((page.body.messages as Body[]).map((m) => m.id)).toEqual([ids[2], ids[1]]);
    const rest = await call(hub, a.token, 'GET', `/v1/messages?limit=2&before=${enc(page.body.next as string)}`);
    expect((rest.body.messages as Body[]).map((m) => m.id)).toEqual([ids[0]]);
    expect((await call(hub, b.token, 'GET', '/v1/messages?direction=received')).body.messages).toHaveLength(3);
  });

  it('§10 the agent directory rows carry exactly id, label, revoked, source', async () => {
    const a = await mint('dir');
    const r = await call(hub, a.token, 'GET', '/v1/account/agents');
    const row = (r.body.agents as Body[]).find((x) => x.id === a.id)!;
    expect(Object.keys(row).sort()).toEqual(['id', 'label', 'revoked', 'source']);
    expect(row).toEqual({ id: a.id, label: 'dir', revoked: false, source: 'account' });
  });

  it('§4/§12 MA2H-Consumer: malformed is 400 invalid_request; no header records no holder', async () => {
    const a = await mint();
    const s = await registerSession(hub, a.token);
    expect((await drain(a.token, s.id, { 'ma2h-consumer': 'home="q"; host=x; pid=1' })).body.error?.code).toBe('invalid_request');
    expect((await drain(a.token, s.id, { 'ma2h-consumer': 'home=h; host=x; pid=notanumber' })).body.error?.code).toBe('invalid_request');
    expect((await drain(a.token, s.id)).status).toBe(200);
    expect((await call(hub, a.token, 'GET', `/v1/sessions/${enc(s.id)}`)).body.session.holder).toBeNull();
  });

  it('§5/§12 the stream: open with hold_ms = min(stream_max_hold, lease − min(1 s, lease/4)), pending entries first, then reconnect hold_bound', async () => {
    const a = await mint();
    const s = await registerSession(hub, a.token, { lease_seconds: 2 });
    await call(hub, hub.human, 'POST', '/v1/directives', { to: s.address, text: 'pending' });
    const st = openSse(hub, a.token, `${hub.streamPath}?session=${enc(s.id)}`, consumerHeader('home-a'));
    expect(await st.status).toBe(200);
    await st.done;
    expect(st.events.map((e) => e.event)).toEqual(['open', 'entries', 'reconnect']);
    expect(st.events[0]!.data).toMatchObject({ session: s.id, lease_seconds: 2, hold_ms: 1500 });
    verifyDelivery(hub, (st.events[1]!.data.messages as Body[])[0]!);
    expect(st.events[2]!.data).toEqual({ reason: 'hold_bound' });
  });

  for (const [how, reason] of [
    ['close', 'closed'],
    ['operator-close', 'closed_by_operator'],
    ['replace', 'replaced'],
  ] as const) {
    it(`§3/§9/§12 a held stream ends with closed {"reason":"${reason}"} on ${how}`, async () => {
      const a = await mint();
      const s = await registerSession(hub, a.token, { lease_seconds: 60 });
      const st = openSse(hub, a.token, `${hub.streamPath}?session=${enc(s.id)}`, consumerHeader('home-a', 1));
      await waitFor(() => st.events.length > 0, { what: 'the open event' });
      if (how === 'close') await call(hub, a.token, 'POST', `/v1/sessions/${enc(s.id)}/close`);
      if (how === 'operator-close') await call(hub, hub.human, 'POST', `/v1/sessions/${enc(s.id)}/operator-close`);
      if (how === 'replace') {
        const other = await call(hub, a.token, 'GET', `/v1/inbox?session=${enc(s.id)}`, undefined, consumerHeader('home-a', 2));
        expect(other.status).toBe(200);
        const held = await call(hub, a.token, 'GET', `/v1/inbox?session=${enc(s.id)}`, undefined, consumerHeader('home-b', 3));
        expect([held.status, held.body.error?.code]).toEqual([409, 'session_held']);
      }
      await st.done;
      expect(st.events.at(-1)).toEqual({ event: 'closed', data: { reason } });
    });
  }
});
