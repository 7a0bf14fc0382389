import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseSignature, validateEntry, verifyMac } from '../../../src/hub/contract/index.js';
import { hubCall, scrapeMetrics, startHub, type TestHub } from '../../helpers/hub.js';
import { waitFor } from '../../helpers/wait.js';

interface Agent {
  id: string;
  token: string;
}

// Mail (§4, §6, §8, §9): drains, acks, the delivery track, receipts, bounces, responses,
// idempotency, first-claim-wins, long-poll holds, directives, expiry.
describe('reference Hub: mail and the delivery track', () => {
  let hub: TestHub;
  let a: Agent;
  let b: Agent;

  beforeAll(async () => {
    hub = await startHub({
      args: ['--lease-min-seconds', '0.5', '--lease-default-seconds', '30', '--max-wait-seconds', '10', '--admin-listen', '127.0.0.1:0'],
    });
    a = await hub.mintAgent('sender');
    b = await hub.mintAgent('recipient');
  });
  afterAll(async () => {
    await hub.dispose();
  });

  const session = async (who: Agent, body: Record<string, unknown> = {}) =>
    (await hubCall(hub, 'POST', '/v1/sessions', { token: who.token, body: { client_key: `ck-${Math.random()}`, ...body } })).body.session as {
      id: string;
      address: string;
    };
  const send = (who: Agent, body: Record<string, unknown>) =>
    hubCall(hub, 'POST', '/v1/messages', { token: who.token, body: { intent: 'notify', text: 'hello', ...body } });
  const drain = async (who: Agent, sess?: string, query = '') =>
    (await hubCall(hub, 'GET', `/v1/inbox?${sess ? `session=${sess}&` : ''}${query}`, { token: who.token })).body.messages as {
      entry: any;
      signature: string;
    }[];
  const ack = (who: Agent, body: Record<string, unknown>) => hubCall(hub, 'POST', '/v1/inbox/ack', { token: who.token, body });
  /** The sender's watch of a message, once the Hub counts it held (/metrics): anything after this happens after the watch read the message. */
  const heldWatch = async (path: string) => {
    const held = async () => (await scrapeMetrics(hub))('oh_hai_hub_held_requests{topic="message"}');
    const before = await held();
    const answer = hubCall(hub, 'GET', path, { token: a.token });
    await waitFor(async () => (await held()) > before, { what: `the Hub to hold GET ${path}` });
    return { answer };
  };
  const message = async (who: Agent | string, id: string) =>
    (await hubCall(hub, 'GET', `/v1/messages/${id}`, { token: typeof who === 'string' ? who : who.token })).body.message;
  const receiptFor = async (who: Agent, sess: string | undefined, messageId: string) =>
    waitFor(async () => (await drain(who, sess)).find((d) => d.entry.kind === 'receipt' && d.entry.message_id === messageId));

  it('queues, drains (signed afresh each time), acks delivered then acknowledged, and sends the sender a receipt', async () => {
    const sa = await session(a);
    const sent = await send(a, { to: `agent:${b.id}`, intent: 'ask', text: 'Review PR 12?', session: sa.id });
    expect(sent.status).toBe(202);
    const m = sent.body.message;
    expect(m).toMatchObject({
      from: sa.address,
      to: `agent:${b.id}`,
      intent: 'ask',
      state: 'queued',
      destination: { address: `agent:${b.id}`, snapshot: 'unknown' },
    });
    expect(m.track.map((t: { state: string }) => t.state)).toEqual(['queued']);
    expect(sent.body.session).toMatchObject({ id: sa.id, lease_seconds: 30 });

    const first = await drain(b);
    const second = await drain(b);
    expect(first).toHaveLength(1);
    const d = first[0]!;
    expect(d.entry).toMatchObject({ kind: 'message', from: sa.address, to: `agent:${b.id}`, message_id: m.id, intent: 'ask', text: 'Review PR 12?' });
    expect(validateEntry(d.entry).ok).toBe(true);
    expect(verifyMac(hub.signingKey, d.signature, d.entry)).toBe(true);
    expect(second[0]!.entry.id).toBe(d.entry.id);
    const [s1, s2] = [parseSignature(d.signature), parseSignature(second[0]!.signature)];
    expect(s1.ok && s2.ok && s1.value.jti !== s2.value.jti).toBe(true);

    const delivered = await ack(b, { delivered: [d.entry.id, 'ent_unknown'] });
    expect(delivered.body).toEqual({ delivered: 1, acknowledged: 0, unknown: ['ent_unknown'] });
    expect((await message(a, m.id)).state).toBe('delivered');
    expect(await drain(b)).toHaveLength(1); // only acknowledged stops redelivery
    const acked = await ack(b, { acknowledged: [d.entry.id] });
    expect(acked.body).toMatchObject({ delivered: 0, acknowledged: 1, unknown: [] });
    expect(await drain(b)).toHaveLength(0);
    expect((await ack(b, { acknowledged: [d.entry.id] })).body.acknowledged).toBe(1); // idempotent
    const final = await message(b, m.id);
    expect(final.state).toBe('acknowledged');
    expect(final.track.map((t: { state: string }) => t.state)).toEqual(['queued', 'delivered', 'acknowledged']);
    expect(final.prior).toBeUndefined();

    const receipt = await receiptFor(a, sa.id, m.id);
    expect(receipt.entry).toMatchObject({ kind: 'receipt', from: `agent:${b.id}`, to: sa.address, status: 'acknowledged' });
    expect(receipt.entry.prior).toBeUndefined();
    expect(validateEntry(receipt.entry).ok).toBe(true);
    // Another agent cannot read the message, nor acknowledge the entry.
    const c = await hub.mintAgent('outsider');
    expect((await hubCall(hub, 'GET', `/v1/messages/${m.id}`, { token: c.token })).status).toBe(404);
    expect((await ack(c, { acknowledged: [d.entry.id] })).body.unknown).toEqual([d.entry.id]);
  });

  it('answers an ask once: the response reaches the asking session; not_respondable and already_responded', async () => {
    const sa = await session(a);
    const ask = (await send(a, { to: `agent:${b.id}`, intent: 'ask', text: 'ping?', session: sa.id })).body.message;
    const notify = (await send(a, { to: `agent:${b.id}`, intent: 'notify', text: 'fyi' })).body.message;
    const r = await hubCall(hub, 'POST', `/v1/messages/${ask.id}/respond`, { token: b.token, body: { text: 'pong' } });
    expect(r.status).toBe(201);
    expect(r.body.message).toMatchObject({ intent: 'response', to: sa.address, in_reply_to: ask.id, state: 'queued' });
    const again = await hubCall(hub, 'POST', `/v1/messages/${ask.id}/respond`, { token: b.token, body: { text: 'pong again' } });
    expect([again.status, again.body.error.code]).toEqual([409, 'already_responded']);
    const nr = await hubCall(hub, 'POST', `/v1/messages/${notify.id}/respond`, { token: b.token, body: { text: 'x' } });
    expect([nr.status, nr.body.error.code]).toEqual([409, 'not_respondable']);
    const wrong = await hubCall(hub, 'POST', `/v1/messages/${ask.id}/respond`, { token: a.token, body: { text: 'x' } });
    expect([wrong.status, wrong.body.error.code]).toEqual([404, 'message_not_found']);
    const got = (await drain(a, sa.id)).find((d) => d.entry.kind === 'response');
    expect(got?.entry).toMatchObject({ kind: 'response', message_id: r.body.message.id, in_reply_to: ask.id, text: 'pong', to: sa.address });
    expect(validateEntry(got!.entry).ok).toBe(true);
    expect((await message(a, ask.id)).response).toMatchObject({ message_id: r.body.message.id, text: 'pong' });
  });

  it('replays an idempotent send (200, same message) and refuses the same key with another body (409)', async () => {
    const body = { to: `agent:${b.id}`, text: 'once only', idempotency_key: 'idem-1' };
    const first = await send(a, body);
    const replay = await send(a, body);
    expect(first.status).toBe(202);
    expect(replay.status).toBe(200);
    expect(replay.body.idempotent_replay).toBe(true);
    expect(replay.body.message.id).toBe(first.body.message.id);
    const conflict = await send(a, { ...body, text: 'something else' });
    expect([conflict.status, conflict.body.error.code]).toEqual([409, 'idempotency_conflict']);
    // The key is the sender's own: another agent may use the same key.
    expect((await send(b, { to: `agent:${a.id}`, text: 'x', idempotency_key: 'idem-1' })).status).toBe(202);
  });

  it('lapse → bounce → receipt to the sender, with how far each message got', async () => {
    // sa first, and a 3 s lease: the two sends and the drain must reach the Hub before sb lapses,
    // and its ack before the drain's renewal runs out (at 1.5 s, four requests at load 10 came
    // within half of it).
    const sa = await session(a);
    const sb = await session(b, { lease_seconds: 3 });
    const seen = (await send(a, { to: sb.address, session: sa.id, text: 'will be delivered' })).body.message;
    const unseen = (await send(a, { to: sb.address, text: 'never delivered' })).body.message;
    const pushed = await drain(b, sb.id);
    const seenEntry = pushed.find((d) => d.entry.message_id === seen.id)!;
    await ack(b, { session: sb.id, delivered: [seenEntry.entry.id] });
    const r1 = await receiptFor(a, sa.id, seen.id);
    expect(r1.entry).toMatchObject({ status: 'bounced', prior: 'delivered', reason: 'session_lapsed', from: sb.address, to: sa.address });
    expect(validateEntry(r1.entry).ok).toBe(true);
    // Sent without a session: the receipt goes to the sender's principal mailbox, which
    // the live session sa may claim (first claim wins) — so it is read through sa.
    const r2 = await receiptFor(a, sa.id, unseen.id);
    expect(r2.entry).toMatchObject({ status: 'bounced', prior: 'queued', reason: 'session_lapsed', to: `agent:${a.id}` });
    const m = await message(a, seen.id);
    expect(m).toMatchObject({ state: 'bounced', prior: 'delivered' });
    expect(m.track.map((t: { state: string }) => t.state)).toEqual(['queued', 'delivered', 'bounced']);
    // Sending to the lapsed address is refused with its state.
    const late = await send(a, { to: sb.address });
    expect(late.status).toBe(410);
    expect(late.body.error).toMatchObject({ code: 'session_lapsed', state: 'lapsed' });
  });

  it('operator close bounces queued mail with reason session_closed_by_operator; a send to it is 410', async () => {
    const sb = await session(b);
    const m = (await send(a, { to: sb.address, intent: 'ask' })).body.message;
    await hubCall(hub, 'POST', `/v1/sessions/${sb.id}/operator-close`, { token: hub.humanToken });
    const r = await receiptFor(a, undefined, m.id);
    expect(r.entry).toMatchObject({ status: 'bounced', prior: 'queued', reason: 'session_closed_by_operator' });
    const late = await send(a, { to: sb.address });
    expect(late.status).toBe(410);
    expect(late.body.error).toMatchObject({ code: 'session_closed_by_operator', state: 'closed_by_operator' });
  });

  it('bounces a response at once when the asking session has ended; the responder gets the receipt', async () => {
    const sa = await session(a);
    const ask = (await send(a, { to: `agent:${b.id}`, intent: 'ask', session: sa.id })).body.message;
    await hubCall(hub, 'POST', `/v1/sessions/${sa.id}/close`, { token: a.token });
    const r = await hubCall(hub, 'POST', `/v1/messages/${ask.id}/respond`, { token: b.token, body: { text: 'too late' } });
    expect(r.status).toBe(201);
    expect(r.body.message).toMatchObject({ state: 'bounced', prior: 'queued' });
    const receipt = await receiptFor(b, undefined, r.body.message.id);
    expect(receipt.entry).toMatchObject({ status: 'bounced', prior: 'queued', reason: 'session_closed', from: sa.address });
  });

  it('first claim wins for principal entries; a closing session releases its unacknowledged claims', async () => {
    const d = await hub.mintAgent('claims');
    const s1 = await session(d);
    const s2 = await session(d);
    const m = (await send(a, { to: `agent:${d.id}`, text: 'for whoever is first' })).body.message;
    const got1 = await drain(d, s1.id);
    expect(got1.map((x) => x.entry.message_id)).toEqual([m.id]);
    expect(await drain(d, s2.id)).toHaveLength(0);
    expect(await drain(d)).toHaveLength(0);
    expect(await drain(d, s1.id)).toHaveLength(1); // still redelivered to its claimant until acknowledged
    await hubCall(hub, 'POST', `/v1/sessions/${s1.id}/close`, { token: d.token });
    expect((await message(a, m.id)).state).toBe('queued'); // released, not bounced
    const got2 = await drain(d, s2.id);
    expect(got2.map((x) => x.entry.id)).toEqual([got1[0]!.entry.id]);
    // Any session of the agent may acknowledge it.
    const s3 = await session(d);
    expect((await ack(d, { session: s3.id, acknowledged: [got1[0]!.entry.id] })).body).toMatchObject({ acknowledged: 1, session: { id: s3.id } });
    expect((await message(a, m.id)).state).toBe('acknowledged');
  });

  it('holds a drain until mail arrives, and answers an empty wait with 200 []', async () => {
    const e = await hub.mintAgent('waiter');
    const se = await session(e);
    const reach = async () =>
      (await hubCall(hub, 'GET', '/v1/fleet', { token: e.token })).body.sessions.find((r: { session_id: string }) => r.session_id === se.id).reachability;
    expect(await reach()).toBe('unknown');
    let settled = false;
    const held = hubCall(hub, 'GET', `/v1/inbox?session=${se.id}&wait=10`, { token: e.token }).finally(() => (settled = true));
    // The held drain has started once the session shows online; nothing is queued, so it is holding.
    await waitFor(async () => (await reach()) === 'online');
    expect(settled).toBe(false);
    await send(a, { to: se.address, text: 'wake up' });
    const r = await held;
    expect(r.status).toBe(200);
    expect(r.body.messages.map((x: { entry: { text: string } }) => x.entry.text)).toEqual(['wake up']);
    const f = await hub.mintAgent('empty');
    const empty = await hubCall(hub, 'GET', '/v1/inbox?wait=0.3', { token: f.token });
    expect(empty.status).toBe(200);
    expect(empty.body.messages).toEqual([]);
  });

  it('GET /v1/messages/:id?wait holds until the ask is answered, and returns at once when it already is', async () => {
    const ask = (await send(a, { to: `agent:${b.id}`, intent: 'ask', text: 'still there?' })).body.message;
    expect((await hubCall(hub, 'GET', `/v1/messages/${ask.id}`, { token: a.token })).body.message.response).toBeUndefined();
    // The answer is sent only once the Hub counts the watch as held: it can only come back
    // carrying the answer if it held and woke, not because it read the ask after the answer.
    const watch = await heldWatch(`/v1/messages/${ask.id}?wait=10`);
    const answered = await hubCall(hub, 'POST', `/v1/messages/${ask.id}/respond`, { token: b.token, body: { text: 'yes' } });
    expect(answered.status).toBe(201);
    const w = await watch.answer;
    expect(w.status).toBe(200);
    expect(w.body.message.response).toMatchObject({ message_id: answered.body.message.id, text: 'yes' });
    // Answered already: the wait returns at once with what is there.
    const again = await hubCall(hub, 'GET', `/v1/messages/${ask.id}?wait=10`, { token: a.token });
    expect(again.body.message.response).toMatchObject({ text: 'yes' });
  });

  it('GET /v1/messages/:id?wait wakes on a state change: the ack of a notify', async () => {
    const m = (await send(a, { to: `agent:${b.id}`, text: 'watch me' })).body.message;
    const entry = await waitFor(async () => (await drain(b)).find((x) => x.entry.message_id === m.id));
    const watch = await heldWatch(`/v1/messages/${m.id}?wait=10`);
    const acked = await hubCall(hub, 'POST', '/v1/inbox/ack', { token: b.token, body: { acknowledged: [entry.entry.id] } });
    expect(acked.status).toBe(200);
    expect((await watch.answer).body.message.state).toBe('acknowledged');
  });

  it('lists sent and received messages newest first with an opaque cursor', async () => {
    const g = await hub.mintAgent('lister');
    const ids: string[] = [];
    for (const text of ['one', 'two', 'three']) ids.push((await send(g, { to: `agent:${b.id}`, text })).body.message.id);
    const page1 = await hubCall(hub, 'GET', '/v1/messages?limit=2', { token: g.token });
    expect(page1.body.messages.map((m: { id: string }) => m.id)).toEqual([ids[2], ids[1]]);
    expect(typeof page1.body.next).toBe('string');
    const page2 = await hubCall(hub, 'GET', `/v1/messages?limit=2&before=${encodeURIComponent(page1.body.next)}`, { token: g.token });
    expect(page2.body.messages.map((m: { id: string }) => m.id)).toEqual([ids[0]]);
    expect(page2.body.next).toBeNull();
    const received = await hubCall(hub, 'GET', '/v1/messages?direction=received&limit=500', { token: b.token });
    expect(received.body.messages.map((m: { id: string }) => m.id)).toEqual(expect.arrayContaining(ids));
  });

  it('delivers directives from the human with no receipts; the human reads its directives', async () => {
    const sb = await session(b);
    const r = await hubCall(hub, 'POST', '/v1/directives', { token: hub.humanToken, body: { to: sb.address, text: 'Run the tests.' } });
    expect(r.status).toBe(202);
    expect(r.body.message).toMatchObject({ intent: 'directive', to: sb.address, state: 'queued' });
    expect(r.body.message.from).toMatch(/^human:acct_/);
    const d = (await drain(b, sb.id)).find((x) => x.entry.kind === 'directive')!;
    expect(d.entry).toEqual({
      id: d.entry.id,
      kind: 'directive',
      from: r.body.message.from,
      to: sb.address,
      created_at: d.entry.created_at,
      text: 'Run the tests.',
      // The directive's message id, so the agent's line names what the human's `hub directive` printed.
      thread_id: r.body.message.id,
    });
    await ack(b, { acknowledged: [d.entry.id] });
    expect((await message(hub.humanToken, r.body.message.id)).state).toBe('acknowledged');
    const mine = await hubCall(hub, 'GET', '/v1/messages', { token: hub.humanToken });
    expect(mine.body.messages[0].id).toBe(r.body.message.id);
    expect((await hubCall(hub, 'POST', '/v1/directives', { token: hub.humanToken, body: { to: 'agent:agt_nobody', text: 'x' } })).status).toBe(404);
    expect((await hubCall(hub, 'POST', '/v1/directives', { token: hub.humanToken, body: { to: 'human:x', text: 'x' } })).status).toBe(400);
  });

  it('moves receipts waiting in an ended session to the principal mailbox instead of losing them', async () => {
    const sa = await session(a);
    const m = (await send(a, { to: `agent:${b.id}`, session: sa.id, text: 'ack me' })).body.message;
    const e = await waitFor(async () => (await drain(b)).find((x) => x.entry.message_id === m.id));
    await ack(b, { acknowledged: [e.entry.id] });
    await hubCall(hub, 'POST', `/v1/sessions/${sa.id}/close`, { token: a.token });
    const moved = await receiptFor(a, undefined, m.id);
    expect(moved.entry).toMatchObject({ status: 'acknowledged', to: `agent:${a.id}` });
  });
});

describe('reference Hub: message TTL', () => {
  it('expires unacknowledged mail after --message-ttl-seconds and tells the sender', async () => {
    const hub = await startHub({ args: ['--message-ttl-seconds', '1'] });
    try {
      const a = await hub.mintAgent('a');
      const b = await hub.mintAgent('b');
      const sent = await hubCall(hub, 'POST', '/v1/messages', { token: a.token, body: { to: `agent:${b.id}`, intent: 'notify', text: 'stale soon' } });
      const id = sent.body.message.id;
      const expired = await waitFor(async () => {
        const m = (await hubCall(hub, 'GET', `/v1/messages/${id}`, { token: a.token })).body.message;
        return m.state === 'expired' ? m : null;
      });
      expect(expired.prior).toBe('queued');
      const drained = (await hubCall(hub, 'GET', '/v1/inbox', { token: a.token })).body.messages;
      expect(drained[0].entry).toMatchObject({ kind: 'receipt', message_id: id, status: 'expired', prior: 'queued', reason: 'message_ttl' });
      expect((await hubCall(hub, 'GET', '/v1/inbox', { token: b.token })).body.messages).toEqual([]);
    } finally {
      await hub.dispose();
    }
  });
});
