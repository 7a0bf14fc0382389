import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/wait.js';
import { call, consumerHeader, enc, expectEntryShape, openSse, registerSession, verifyDelivery, type Body } from './client.js';
import { canonicalJson, mac, startPeerHub, type Json, type PeerHub, type PeerHubOptions } from './index.js';

/**
 * The peer Hub checked against MA2H.md itself, over the wire, so that a conformance pass
 * means the CLI met the text and not a second misreading. No CLI here.
 */

const hubs: PeerHub[] = [];
afterEach(async () => {
  for (const h of hubs.splice(0)) await h.close();
});

async function hub(opts: PeerHubOptions = {}): Promise<PeerHub> {
  const h = await startPeerHub(opts);
  hubs.push(h);
  return h;
}

const register = registerSession;
const verify = (h: PeerHub, d: Body) => verifyDelivery({ url: h.url, signingKey: h.knobs.signingKey }, d);
const openSseAt = (h: PeerHub, token: string, query: string, headers: Record<string, string> = {}) =>
  openSse(h, token, `${h.knobs.streamPath}?${query}`, headers);

describe('canonical JSON and the MAC (shared vectors)', () => {
  const vectors = JSON.parse(readFileSync(path.join(import.meta.dirname, '..', 'vectors', 'signatures.json'), 'utf8')) as {
    key: string;
    cases: { entry: Json; t: number; jti: string; canonical: string; signature: string }[];
  };
  for (const [i, c] of vectors.cases.entries()) {
    it(`case ${i}`, () => {
      expect(canonicalJson(c.entry)).toBe(c.canonical);
      expect(`t=${c.t},jti=${c.jti},alg=hmac-sha256,v1=${mac(vectors.key, c.t, c.jti, c.entry)}`).toBe(c.signature);
    });
  }
});

describe('capability (§1)', () => {
  it('advertises what the knobs say, with no auth, and leaves out what is switched off', async () => {
    const h = await hub();
    const full = await call(h, null, 'GET', '/v1/capability');
    expect(full.status).toBe(200);
    expect(full.body).toMatchObject({ protocol: 'MA2H', version: '0.5.13', signature_algs: ['hmac-sha256'], replay_window_seconds: 90 });
    expect(full.body.inbound).toMatchObject({ session_param: true, stream_url: '/v1/inbox/stream', stream_max_hold_seconds: 0.7, keepalive_seconds: 0.2 });
    expect(full.body.account.agent_directory).toBe('/v1/account/agents');
    const bare = await call(
      await hub({ streamPath: null, replayWindowSeconds: null, sessionParam: null, agentDirectory: false }),
      null,
      'GET',
      '/v1/capability',
    );
    expect('stream_url' in bare.body.inbound).toBe(false);
    expect('session_param' in bare.body.inbound).toBe(false);
    expect('replay_window_seconds' in bare.body).toBe(false);
    expect('agent_directory' in bare.body.account).toBe(false);
  });
});

describe('auth and errors (§0, §12)', () => {
  it('401 without or with an unknown token, 403 for the wrong kind, 400 for a token in the URL, 404/405 for routes', async () => {
    const h = await hub();
    const a = h.addAgent();
    const none = await call(h, null, 'GET', '/v1/whoami');
    expect([none.status, none.body.error.code, typeof none.body.error.message]).toEqual([401, 'unauthorized', 'string']);
    expect((await call(h, 'nope', 'GET', '/v1/whoami')).status).toBe(401);
    expect((await call(h, h.humanToken, 'POST', '/v1/sessions', { client_key: 'k' })).body.error.code).toBe('forbidden');
    expect((await call(h, a.token, 'POST', '/v1/directives', { to: `agent:${a.id}`, text: 'x' })).body.error.code).toBe('forbidden');
    const leaked = await call(h, null, 'GET', `/v1/capability?token=${enc(a.token)}`);
    expect([leaked.status, leaked.body.error.code]).toEqual([400, 'token_in_url']);
    expect((await call(h, a.token, 'GET', '/v1/nowhere')).status).toBe(404);
    expect((await call(h, a.token, 'DELETE', '/v1/whoami')).status).toBe(405);
    const who = await call(h, a.token, 'GET', '/v1/whoami');
    expect(who.body).toMatchObject({ kind: 'agent', agent: { id: a.id, account_id: h.store.accountId } });
  });
});

describe('sessions (§3, §12)', () => {
  it('register clamps the lease; name adopts from the holder home, is held against another home, is taken over when stale', async () => {
    // The holder stays seen for 2 s: the 409 below must reach the Hub within that of the adoption
    // (at 0.3 s, the adoption and the refused register took up to 260 ms at load 14–16).
    const h = await hub({ holderSeenSeconds: 2, leaseMaxSeconds: 100 });
    const a = h.addAgent();
    const s = await register(h, a.token, { name: 'n1', home: 'home-a', host: 'h', pid: 1, lease_seconds: 99999 });
    expect(s.lease_seconds).toBe(100);
    expect(s.address).toBe(`agent:${a.id}#${s.id}`);
    const adopted = await call(h, a.token, 'POST', '/v1/sessions', { client_key: 'other', name: 'n1', home: 'home-a', pid: 2, lease_seconds: 30 });
    expect([adopted.status, adopted.body.session.id, adopted.body.session.lease_seconds]).toEqual([200, s.id, 30]);
    const held = await call(h, a.token, 'POST', '/v1/sessions', { client_key: 'x', name: 'n1', home: 'home-b', pid: 3 });
    expect([held.status, held.body.error.code]).toEqual([409, 'session_held']);
    expect(Object.keys(held.body.error.holder).sort()).toEqual(['home', 'host', 'last_seen_at', 'pid', 'since']);
    await waitFor(async () => (await call(h, a.token, 'POST', '/v1/sessions', { client_key: 'x', name: 'n1', home: 'home-b', pid: 3 })).status === 200, {
      what: 'a stale holder to be taken over',
    });
    expect(h.store.sessions.get(s.id as string)!.holder?.home).toBe('home-b');
    const k1 = await register(h, a.token, { client_key: 'same' });
    const k2 = await register(h, a.token, { client_key: 'same' });
    expect(k1.id).not.toBe(k2.id);
    expect((await call(h, a.token, 'POST', '/v1/sessions', { client_key: 'k', name: 'bad name' })).body.error.code).toBe('invalid_request');
  });

  it('GET does not renew; close is idempotent; presenting a closed session is 410 with its state; another agent gets 404', async () => {
    const h = await hub();
    const a = h.addAgent();
    const other = h.addAgent();
    const s = await register(h, a.token);
    const got = await call(h, a.token, 'GET', `/v1/sessions/${enc(s.id)}`);
    expect(got.body.session.expires_at).toBe(s.expires_at);
    expect((await call(h, other.token, 'GET', `/v1/sessions/${enc(s.id)}`)).body.error.code).toBe('session_not_found');
    const closed = await call(h, a.token, 'POST', `/v1/sessions/${enc(s.id)}/close`);
    expect(closed.body.session.state).toBe('closed');
    const again = await call(h, a.token, 'POST', `/v1/sessions/${enc(s.id)}/close`);
    expect([again.status, again.body.session.closed_at]).toEqual([200, closed.body.session.closed_at]);
    const drain = await call(h, a.token, 'GET', `/v1/inbox?session=${enc(s.id)}`);
    expect([drain.status, drain.body.error.code, drain.body.error.state]).toEqual([410, 'session_closed', 'closed']);
  });

  it('a lease runs out on the Hub clock: lapsed, 410 session_lapsed', async () => {
    const h = await hub({ leaseMinSeconds: 0.2 });
    const a = h.addAgent();
    const s = await register(h, a.token, { lease_seconds: 0.2 });
    await waitFor(async () => (await call(h, a.token, 'GET', `/v1/sessions/${enc(s.id)}`)).body.session.state === 'lapsed', { what: 'the lapse' });
    expect((await call(h, a.token, 'GET', `/v1/inbox?session=${enc(s.id)}`)).body.error.code).toBe('session_lapsed');
  });

  it('too_many_sessions; operator close refuses re-register by client_key and by name until lifted', async () => {
    const h = await hub({ maxLivePerAgent: 2 });
    const a = h.addAgent();
    const s = await register(h, a.token, { client_key: 'ck', name: 'nm' });
    await register(h, a.token);
    expect((await call(h, a.token, 'POST', '/v1/sessions', { client_key: 'third' })).body.error.code).toBe('too_many_sessions');
    expect((await call(h, h.humanToken, 'POST', `/v1/sessions/${enc(s.id)}/operator-close`)).body.session.state).toBe('closed_by_operator');
    expect((await call(h, a.token, 'POST', '/v1/sessions', { client_key: 'ck' })).body.error.code).toBe('session_closed_by_operator');
    expect((await call(h, a.token, 'POST', '/v1/sessions', { client_key: 'new', name: 'nm' })).body.error.code).toBe('session_closed_by_operator');
    const drain = await call(h, a.token, 'GET', `/v1/inbox?session=${enc(s.id)}`);
    expect([drain.status, drain.body.error.code]).toEqual([403, 'session_closed_by_operator']);
    expect((await call(h, h.humanToken, 'POST', '/v1/operator-stops/lift', { agent_id: a.id, name: 'nm' })).body.lifted).toBe(1);
    expect((await call(h, a.token, 'POST', '/v1/sessions', { client_key: 'ck' })).status).toBe(201);
  });

  it('one consumer per session: another home is 409 while the holder is seen; a malformed header is 400; no header is no holder', async () => {
    const h = await hub();
    const a = h.addAgent();
    const s = await register(h, a.token);
    const q = `/v1/inbox?session=${enc(s.id)}`;
    expect((await call(h, a.token, 'GET', q, undefined, consumerHeader('home-a'))).status).toBe(200);
    const held = await call(h, a.token, 'GET', q, undefined, consumerHeader('home-b'));
    expect([held.status, held.body.error.holder.home]).toEqual([409, 'home-a']);
    expect((await call(h, a.token, 'GET', q)).status).toBe(200);
    expect((await call(h, a.token, 'GET', q, undefined, { 'ma2h-consumer': 'home="quoted"; host=x; pid=1' })).body.error.code).toBe('invalid_request');
  });
});

describe('mailboxes and acks (§4, §6, §12)', () => {
  it('first-claim-wins; a closed session releases its claims; each delivery is signed afresh; only acknowledged stops redelivery', async () => {
    const h = await hub();
    const a = h.addAgent();
    const s1 = await register(h, a.token);
    const s2 = await register(h, a.token);
    const d = await call(h, h.humanToken, 'POST', '/v1/directives', { to: `agent:${a.id}`, text: 'to the principal' });
    expect(d.status).toBe(202);
    const first = await call(h, a.token, 'GET', `/v1/inbox?session=${enc(s1.id)}`);
    expect(first.body.messages).toHaveLength(1);
    expect(first.body.session.id).toBe(s1.id);
    const sig1 = verify(h, first.body.messages[0]);
    expect((await call(h, a.token, 'GET', `/v1/inbox?session=${enc(s2.id)}`)).body.messages).toHaveLength(0);
    expect((await call(h, a.token, 'GET', '/v1/inbox')).body.messages).toHaveLength(0);
    const redelivered = await call(h, a.token, 'GET', `/v1/inbox?session=${enc(s1.id)}`);
    const sig2 = verify(h, redelivered.body.messages[0]);
    expect(redelivered.body.messages[0].entry.id).toBe(first.body.messages[0].entry.id);
    expect(sig2.jti).not.toBe(sig1.jti);
    const id = first.body.messages[0].entry.id as string;
    const acked = await call(h, a.token, 'POST', '/v1/inbox/ack', { session: s1.id, delivered: [id, 'nope'] });
    expect(acked.body).toMatchObject({ delivered: 1, acknowledged: 0, unknown: ['nope'], session: { id: s1.id } });
    expect((await call(h, a.token, 'GET', `/v1/inbox?session=${enc(s1.id)}`)).body.messages).toHaveLength(1);
    await call(h, a.token, 'POST', `/v1/sessions/${enc(s1.id)}/close`);
    expect((await call(h, a.token, 'GET', '/v1/inbox')).body.messages).toHaveLength(1);
    expect((await call(h, a.token, 'GET', `/v1/inbox?session=${enc(s2.id)}`)).body.messages).toHaveLength(1);
    expect((await call(h, a.token, 'POST', '/v1/inbox/ack', { session: s1.id, acknowledged: [id] })).status).toBe(410);
    const ack = await call(h, a.token, 'POST', '/v1/inbox/ack', { acknowledged: [id] });
    expect(ack.body).toMatchObject({ acknowledged: 1, unknown: [] });
    expect((await call(h, a.token, 'POST', '/v1/inbox/ack', { acknowledged: [id] })).status).toBe(200);
    expect((await call(h, a.token, 'GET', `/v1/inbox?session=${enc(s2.id)}`)).body.messages).toHaveLength(0);
  });

  it('the principal drain holds with ?wait until mail exists', async () => {
    const h = await hub({ maxWaitSeconds: 20 });
    const a = h.addAgent();
    const pending = call(h, a.token, 'GET', '/v1/inbox?wait=20');
    await waitFor(() => h.requests.some((q) => q.route === 'inbox.drain' && q.status === null), { what: 'the drain to be held' });
    await call(h, h.humanToken, 'POST', '/v1/directives', { to: `agent:${a.id}`, text: 'wake up' });
    const r = await pending;
    expect(r.body.messages.map((m: Body) => m.entry.text)).toEqual(['wake up']);
  });
});

describe('the stream (§5, §12)', () => {
  it('open, pending entries, keep-alives and the hold bound, in SSE framing a client must accept', async () => {
    const h = await hub({ streamMaxHoldSeconds: 5, keepaliveSeconds: 0.05 });
    const a = h.addAgent();
    const s = await register(h, a.token, { lease_seconds: 2 });
    await call(h, h.humanToken, 'POST', '/v1/directives', { to: s.address, text: 'é\u2028🙂 over split chunks' });
    const st = openSseAt(h, a.token, `session=${enc(s.id)}`, consumerHeader('home-a'));
    expect(await st.status).toBe(200);
    await st.done;
    expect(st.events.map((e) => e.event)).toEqual(['open', 'entries', 'reconnect']);
    // hold = min(stream_max_hold, lease − min(1 s, lease/4)) = min(5000, 2000 − 500)
    expect(st.events[0]!.data).toMatchObject({ session: s.id, lease_seconds: 2, hold_ms: 1500, stream_max_hold_seconds: 5 });
    expect(verify(h, st.events[1]!.data.messages[0]).t).toBeGreaterThan(0);
    expect(st.events[1]!.data.messages[0].entry.text).toBe('é\u2028🙂 over split chunks');
    expect(st.events[2]!.data).toEqual({ reason: 'hold_bound' });
    expect(st.comments.filter((c) => c.trim() === 'keepalive').length).toBeGreaterThan(0);
    const raw = Buffer.concat(st.chunks);
    expect([...raw.subarray(0, 3)]).toEqual([0xef, 0xbb, 0xbf]);
    expect(raw.toString('utf8')).toContain('\r\ndata: ');
    expect(raw.toString('utf8')).toMatch(/^retry: 2500\r$/m);
    expect(raw.toString('utf8')).toContain('\r\ndata:\r\n');
    expect(raw.toString('utf8')).toMatch(/^data: ?[^\r]*\r\nevent: ?open\r$/m);
    // Some chunk begins inside a multi-byte character.
    expect(st.chunks.some((c) => c.length > 0 && (c[0]! & 0xc0) === 0x80)).toBe(true);
  });

  for (const [how, reason] of [
    ['close', 'closed'],
    ['operator-close', 'closed_by_operator'],
    ['lapse', 'lapsed'],
    ['replace', 'replaced'],
  ] as const) {
    it(`a held stream ends with closed {"reason":"${reason}"} on ${how}`, async () => {
      const h = await hub({ streamMaxHoldSeconds: 30 });
      const a = h.addAgent();
      const s = await register(h, a.token);
      const st = openSseAt(h, a.token, `session=${enc(s.id)}`, consumerHeader('home-a', 1));
      await waitFor(() => st.events.length > 0, { what: 'the open event' });
      if (how === 'close') await call(h, a.token, 'POST', `/v1/sessions/${enc(s.id)}/close`);
      if (how === 'operator-close') await call(h, h.humanToken, 'POST', `/v1/sessions/${enc(s.id)}/operator-close`);
      if (how === 'lapse') h.store.lapseNow(s.id as string);
      if (how === 'replace') expect((await call(h, a.token, 'GET', `/v1/inbox?session=${enc(s.id)}`, undefined, consumerHeader('home-a', 2))).status).toBe(200);
      await st.done;
      expect(st.events.at(-1)).toEqual({ event: 'closed', data: { reason } });
    });
  }

  it('406 without Accept: text/event-stream; 409 from another home while held; errors before the stream are JSON', async () => {
    const h = await hub({ streamMaxHoldSeconds: 30 });
    const a = h.addAgent();
    const s = await register(h, a.token);
    expect((await call(h, a.token, 'GET', `/v1/inbox/stream?session=${enc(s.id)}`, undefined, { accept: 'application/json' })).status).toBe(406);
    const st = openSseAt(h, a.token, `session=${enc(s.id)}`, consumerHeader('home-a'));
    await waitFor(() => st.events.length > 0, { what: 'the open event' });
    const other = await call(h, a.token, 'GET', `/v1/inbox/stream?session=${enc(s.id)}`, undefined, {
      accept: 'text/event-stream',
      ...consumerHeader('home-b'),
    });
    expect([other.status, other.body.error.code]).toEqual([409, 'session_held']);
    st.abort();
  });
});

describe('messages, responses and receipts (§8, §12)', () => {
  it('send, idempotency, respond, receipts with the right shape, bounce of a response to an ended asker', async () => {
    const h = await hub();
    const a = h.addAgent();
    const b = h.addAgent();
    const sa = await register(h, a.token);
    const sb = await register(h, b.token);
    const body = { to: sb.address, intent: 'ask', text: 'q?', session: sa.id, idempotency_key: 'k1' };
    const sent = await call(h, a.token, 'POST', '/v1/messages', body);
    expect(sent.status).toBe(202);
    expect(sent.body.message).toMatchObject({ state: 'queued', from: sa.address, to: sb.address, destination: { address: sb.address, snapshot: 'unknown' } });
    expect(sent.body.session.id).toBe(sa.id);
    const replay = await call(h, a.token, 'POST', '/v1/messages', body);
    expect([replay.status, replay.body.idempotent_replay, replay.body.message.id]).toEqual([200, true, sent.body.message.id]);
    expect((await call(h, a.token, 'POST', '/v1/messages', { ...body, text: 'other' })).body.error.code).toBe('idempotency_conflict');
    expect((await call(h, a.token, 'POST', '/v1/messages', { ...body, to: 'agent:nobody', idempotency_key: 'k2' })).body.error.code).toBe(
      'recipient_not_found',
    );
    expect((await call(h, a.token, 'POST', '/v1/messages', { to: sb.address, intent: 'notify', text: 'x'.repeat(65_537) })).body.error.code).toBe(
      'text_too_long',
    );

    const atB = await call(h, b.token, 'GET', `/v1/inbox?session=${enc(sb.id)}`);
    const askEntry = atB.body.messages[0].entry as Body;
    verify(h, atB.body.messages[0]);
    // Nothing changes the ask while the wait is held but the response (§8 `wait`).
    const waited = call(h, a.token, 'GET', `/v1/messages/${enc(sent.body.message.id)}?wait=20`);
    await waitFor(() => h.requests.some((q) => q.route === 'messages.get' && q.status === null), { what: 'the wait to be held' });
    const resp = await call(h, b.token, 'POST', `/v1/messages/${enc(askEntry.message_id)}/respond`, { text: 'a!', session: sb.id });
    expect([resp.status, resp.body.message.intent, resp.body.message.to]).toEqual([201, 'response', sa.address]);
    expect((await waited).body.message.response).toMatchObject({ message_id: resp.body.message.id, text: 'a!' });
    await call(h, b.token, 'POST', '/v1/inbox/ack', { session: sb.id, acknowledged: [askEntry.id] });
    expect((await call(h, b.token, 'POST', `/v1/messages/${enc(askEntry.message_id)}/respond`, { text: 'again' })).body.error.code).toBe('already_responded');

    const atA = (await call(h, a.token, 'GET', `/v1/inbox?session=${enc(sa.id)}`)).body.messages.map((m: Body) => m.entry as Body);
    for (const e of atA) expectEntryShape(e);
    const receipt = atA.find((e: Body) => e.kind === 'receipt');
    expect(receipt).toMatchObject({ status: 'acknowledged', message_id: sent.body.message.id, from: sb.address });
    expect('prior' in receipt).toBe(false);
    expect(atA.find((e: Body) => e.kind === 'response')).toMatchObject({ in_reply_to: sent.body.message.id, text: 'a!' });

    // An ask whose asker session has ended: the response bounces at once, the responder gets the receipt.
    const ask2 = await call(h, a.token, 'POST', '/v1/messages', { to: sb.address, intent: 'task', text: 't', session: sa.id });
    await call(h, a.token, 'POST', `/v1/sessions/${enc(sa.id)}/close`);
    const late = await call(h, b.token, 'POST', `/v1/messages/${enc(ask2.body.message.id)}/respond`, { text: 'too late' });
    expect([late.body.message.state, late.body.message.prior]).toEqual(['bounced', 'queued']);
    const bounce = h.store.entries.map((e) => e.entry).find((e) => e.kind === 'receipt' && e.message_id === late.body.message.id)!;
    expect(bounce).toMatchObject({ status: 'bounced', prior: 'queued', reason: 'session_closed', to: `agent:${b.id}` });
  });

  it('a session that ends bounces its queued mail with prior and reason; lists are newest first with an opaque cursor', async () => {
    const h = await hub();
    const a = h.addAgent();
    const b = h.addAgent();
    const sb = await register(h, b.token);
    const ids: string[] = [];
    for (const t of ['1', '2', '3'])
      ids.push((await call(h, a.token, 'POST', '/v1/messages', { to: sb.address, intent: 'notify', text: t })).body.message.id as string);
    const drained = await call(h, b.token, 'GET', `/v1/inbox?session=${enc(sb.id)}`);
    await call(h, b.token, 'POST', '/v1/inbox/ack', { delivered: [drained.body.messages[0].entry.id] });
    h.store.lapseNow(sb.id as string);
    const m1 = (await call(h, a.token, 'GET', `/v1/messages/${enc(ids[0]!)}`)).body.message;
    const m2 = (await call(h, a.token, 'GET', `/v1/messages/${enc(ids[1]!)}`)).body.message;
    expect([m1.state, m1.prior, m2.state, m2.prior]).toEqual(['bounced', 'delivered', 'bounced', 'queued']);
    expect(h.store.entries.filter((e) => e.entry.kind === 'receipt').map((e) => e.entry.reason)).toEqual([
      'session_lapsed',
      'session_lapsed',
      'session_lapsed',
    ]);
    const page = await call(h, a.token, 'GET', '/v1/messages?limit=2');
    expect(page.body.messages.map((m: Body) => m.id)).toEqual([ids[2], ids[1]]);
    const rest = await call(h, a.token, 'GET', `/v1/messages?limit=2&before=${enc(page.body.next)}`);
    expect([rest.body.messages.map((m: Body) => m.id), rest.body.next]).toEqual([[ids[0]], null]);
    expect((await call(h, b.token, 'GET', '/v1/messages?direction=received')).body.messages).toHaveLength(3);
    expect((await call(h, h.addAgent().token, 'GET', `/v1/messages/${enc(ids[0]!)}`)).status).toBe(404);
  });
});
