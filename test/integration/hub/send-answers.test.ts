import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateEntry, verifyMac } from '../../../src/hub/contract/index.js';
import { hubCall, startHub, type TestHub } from '../../helpers/hub.js';
import { waitFor } from '../../helpers/wait.js';
import { openSse, type SseConn } from './sse.js';

// On PostgreSQL a send to a live session or a principal address, and a response, is ONE statement
// (messages.ts insertInOne; a response after one read of its ask) and anything it does not take
// falls back to the locked unit. These pin, on both stores, what a send answers: the accepted send
// (its message read back as stored, its entry as pushed and signed, the sender's lease), the replay
// and the conflict of a key, and every refusal of the recipient or of the sender's session, word for
// word; and what a response answers, alike. A one-statement path that took a send it must not, or
// stored a text the unit would not, fails here.
describe('reference Hub: what a send answers (the one-statement send and its fallback)', () => {
  let hub: TestHub;
  let a: { id: string; token: string };
  let b: { id: string; token: string };

  beforeAll(async () => {
    hub = await startHub({ args: ['--lease-min-seconds', '0.5'] });
    a = await hub.mintAgent('sender');
    b = await hub.mintAgent('recipient');
  });
  afterAll(async () => {
    await hub.dispose();
  });

  const session = async (who: { token: string }, body: Record<string, unknown> = {}) => {
    const r = await hubCall(hub, 'POST', '/v1/sessions', { token: who.token, body: { client_key: `ck-${Math.random()}`, ...body } });
    expect(r.status, r.text).toBe(201);
    return r.body.session as { id: string; address: string; expires_at: string };
  };
  const send = (body: Record<string, unknown>, token = a.token) =>
    hubCall(hub, 'POST', '/v1/messages', { token, body: { intent: 'notify', text: 'hello', ...body } });
  /** The refusal's whole error object. */
  const refusal = async (body: Record<string, unknown>, status: number) => {
    const r = await send(body);
    expect(r.status, r.text).toBe(status);
    return r.body.error as Record<string, unknown>;
  };
  /** The first entry a stream was pushed, its signature checked (over the stored body: the entry's canonical JSON). */
  const firstPushed = async (c: SseConn) => {
    const [d] = JSON.parse((await c.next((e) => e.event === 'entries')).data).messages as Array<{ entry: Record<string, unknown>; signature: string }>;
    expect(verifyMac(hub.signingKey, d!.signature, d!.entry)).toBe(true);
    return d!.entry;
  };
  const sentCount = async () => (await hubCall(hub, 'GET', '/v1/messages?direction=sent&limit=500', { token: a.token })).body.messages.length as number;

  it('accepts a send to a live session: the answer is the message as stored, its entry is pushed signed, the sender session renewed', async () => {
    const to = await session(b, { lease_seconds: 60 });
    const mine = await session(a, { lease_seconds: 60 });
    const text = 'quote " backslash \\ line\nu2028 \u2028 emoji 🙂';
    const r = await send({ to: to.address, intent: 'ask', text, session: mine.id, in_reply_to: 'msg_000000000000000000000000' });
    expect(r.status, r.text).toBe(202);
    const m = r.body.message;
    expect(m).toEqual({
      id: m.id,
      from: `agent:${a.id}#${mine.id}`,
      to: to.address,
      intent: 'ask',
      text,
      created_at: m.created_at,
      state: 'queued',
      track: [{ state: 'queued', at: m.created_at }],
      destination: { address: to.address, snapshot: 'unknown' },
      in_reply_to: 'msg_000000000000000000000000',
    });
    expect(m.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    // The sender's session was presented: renewed, and the lease in the answer is the stored one.
    const lease = r.body.session;
    expect(lease.id).toBe(mine.id);
    expect(lease.lease_seconds).toBe(60);
    expect(lease.expires_at >= mine.expires_at).toBe(true);
    const stored = await hubCall(hub, 'GET', `/v1/sessions/${mine.id}`, { token: a.token });
    expect(stored.body.session.expires_at).toBe(lease.expires_at);
    // The message as the store has it is the answer.
    expect((await hubCall(hub, 'GET', `/v1/messages/${m.id}`, { token: a.token })).body.message).toEqual(m);
    // Its entry, as pushed: the stored body is the entry's canonical JSON (the signature is over it), at the message's instant.
    const c = await openSse(`${hub.url}/v1/inbox/stream?session=${to.id}`, { token: b.token });
    try {
      const entry = await firstPushed(c);
      expect(entry).toEqual({
        id: entry.id,
        kind: 'message',
        from: m.from,
        to: to.address,
        created_at: m.created_at,
        message_id: m.id,
        intent: 'ask',
        text,
        in_reply_to: 'msg_000000000000000000000000',
      });
      expect(validateEntry(entry).ok).toBe(true);
      // A stream open on the recipient session: the next send finds it online.
      const again = await send({ to: to.address });
      expect(again.status, again.text).toBe(202);
      expect(again.body.message.destination).toEqual({ address: to.address, snapshot: 'online' });
      expect(again.body.session).toBeUndefined();
    } finally {
      c.close();
    }
  });

  it("takes the human's directive to a live session alike: the answer as stored, the entry pushed and signed; an ended session is 410", async () => {
    const to = await session(b);
    const r = await hubCall(hub, 'POST', '/v1/directives', { token: hub.humanToken, body: { to: to.address, text: 'stop "now"' } });
    expect(r.status, r.text).toBe(202);
    const m = r.body.message;
    expect(m).toEqual({
      id: m.id,
      from: m.from,
      to: to.address,
      intent: 'directive',
      text: 'stop "now"',
      created_at: m.created_at,
      state: 'queued',
      track: [{ state: 'queued', at: m.created_at }],
      destination: { address: to.address, snapshot: 'unknown' },
    });
    expect(m.from).toMatch(/^human:/);
    expect((await hubCall(hub, 'GET', `/v1/messages/${m.id}`, { token: hub.humanToken })).body.message).toEqual(m);
    const c = await openSse(`${hub.url}/v1/inbox/stream?session=${to.id}`, { token: b.token });
    try {
      const entry = await firstPushed(c);
      expect(entry).toEqual({ id: entry.id, kind: 'directive', from: m.from, to: to.address, created_at: m.created_at, text: 'stop "now"', thread_id: m.id });
    } finally {
      c.close();
    }
    expect((await hubCall(hub, 'POST', `/v1/sessions/${to.id}/close`, { token: b.token })).status).toBe(200);
    const ended = await hubCall(hub, 'POST', '/v1/directives', { token: hub.humanToken, body: { to: to.address, text: 'late' } });
    expect(ended.status, ended.text).toBe(410);
    expect(ended.body.error).toEqual({ code: 'session_closed', message: `session ${to.id} is closed; it receives no more mail`, state: 'closed' });
  });

  it('answers a replayed key with the stored message (200) and a reused key with 409, storing nothing more', async () => {
    const to = await session(b);
    const first = await send({ to: to.address, idempotency_key: 'k-replay' });
    expect(first.status, first.text).toBe(202);
    const before = await sentCount();
    const replay = await send({ to: to.address, idempotency_key: 'k-replay' });
    expect(replay.status, replay.text).toBe(200);
    expect(replay.body).toEqual({ message: { ...first.body.message, idempotent_replay: true }, idempotent_replay: true });
    expect(await refusal({ to: to.address, idempotency_key: 'k-replay', text: 'other' }, 409)).toEqual({
      code: 'idempotency_conflict',
      message: `idempotency_key k-replay was already used for a different message (${first.body.message.id})`,
      message_id: first.body.message.id,
    });
    // A key replayed once its recipient session has ended: still the replay, not the session's refusal.
    expect((await hubCall(hub, 'POST', `/v1/sessions/${to.id}/close`, { token: b.token })).status).toBe(200);
    expect((await send({ to: to.address, idempotency_key: 'k-replay' })).status).toBe(200);
    expect(await sentCount()).toBe(before);
  });

  it('takes one of sends racing with one key: the others replay it (PostgreSQL: the unique index fails them, the statement runs again and misses)', async () => {
    const to = await session(b);
    const before = await sentCount();
    const answers = await Promise.all(Array.from({ length: 8 }, () => send({ to: to.address, idempotency_key: 'k-race' })));
    expect(answers.map((r) => r.status).sort()).toEqual([200, 200, 200, 200, 200, 200, 200, 202]);
    expect(new Set(answers.map((r) => r.body.message.id)).size).toBe(1);
    expect(await sentCount()).toBe(before + 1);
  });

  it('refuses what it cannot deliver to, word for word: 400, 404 recipient_not_found, 410 session_<state>', async () => {
    const before = await sentCount();
    expect(await refusal({ to: 'nobody' }, 400)).toMatchObject({ code: 'invalid_request' });
    const unknownAgent = 'agt_0123456789abcdef01234567';
    expect(await refusal({ to: `agent:${unknownAgent}` }, 404)).toEqual({
      code: 'recipient_not_found',
      message: `no agent ${unknownAgent} in this account can receive mail`,
    });
    const other = await session(a);
    // A session of another agent, and a session id nobody has: the agent has no such session.
    expect(await refusal({ to: `agent:${b.id}#${other.id}` }, 404)).toEqual({
      code: 'recipient_not_found',
      message: `agent ${b.id} has no session ${other.id}`,
    });
    expect(await refusal({ to: `agent:${b.id}#sess_0123456789abcdef01234567` }, 404)).toEqual({
      code: 'recipient_not_found',
      message: `agent ${b.id} has no session sess_0123456789abcdef01234567`,
    });
    expect(await refusal({ to: `agent:${unknownAgent}#${other.id}` }, 404)).toEqual({
      code: 'recipient_not_found',
      message: `no agent ${unknownAgent} in this account can receive mail`,
    });
    const closed = await session(b);
    expect((await hubCall(hub, 'POST', `/v1/sessions/${closed.id}/close`, { token: b.token })).status).toBe(200);
    expect(await refusal({ to: closed.address }, 410)).toEqual({
      code: 'session_closed',
      message: `session ${closed.id} is closed; it receives no more mail`,
      state: 'closed',
    });
    const stopped = await session(b);
    expect((await hubCall(hub, 'POST', `/v1/sessions/${stopped.id}/operator-close`, { token: hub.humanToken })).status).toBe(200);
    expect(await refusal({ to: stopped.address }, 410)).toEqual({
      code: 'session_closed_by_operator',
      message: `session ${stopped.id} is closed by operator; it receives no more mail`,
      state: 'closed_by_operator',
    });
    // Past its lease: lapsed by the send itself, or by the sweep before it; the answer is the same.
    const lapsing = await session(b, { lease_seconds: 0.5 });
    await waitFor(() => Date.parse(lapsing.expires_at) + 50 < Date.now());
    expect(await refusal({ to: lapsing.address }, 410)).toEqual({
      code: 'session_lapsed',
      message: `session ${lapsing.id} is lapsed; it receives no more mail`,
      state: 'lapsed',
    });
    // A revoked agent receives nothing, at its sessions or its principal address.
    const gone = await hub.mintAgent('soon-revoked');
    const goneSession = await session(gone);
    expect((await hubCall(hub, 'POST', `/v1/account/agents/${gone.id}/revoke`, { token: hub.humanToken })).status).toBe(200);
    for (const to of [goneSession.address, `agent:${gone.id}`]) {
      expect(await refusal({ to }, 404)).toEqual({ code: 'recipient_not_found', message: `no agent ${gone.id} in this account can receive mail` });
    }
    expect(await sentCount()).toBe(before);
  });

  it("refuses a sender's session it cannot present, word for word: 404 session_not_found, 410, 403 — and stores nothing", async () => {
    const to = await session(b);
    const before = await sentCount();
    const foreign = await session(b);
    expect(await refusal({ to: to.address, session: foreign.id }, 404)).toEqual({
      code: 'session_not_found',
      message: `no session ${foreign.id} for agent ${a.id}`,
    });
    const closed = await session(a);
    expect((await hubCall(hub, 'POST', `/v1/sessions/${closed.id}/close`, { token: a.token })).status).toBe(200);
    expect(await refusal({ to: to.address, session: closed.id }, 410)).toEqual({
      code: 'session_closed',
      message: `session ${closed.id} was closed by its agent`,
      state: 'closed',
    });
    const stopped = await session(a);
    expect((await hubCall(hub, 'POST', `/v1/sessions/${stopped.id}/operator-close`, { token: hub.humanToken })).status).toBe(200);
    expect(await refusal({ to: to.address, session: stopped.id }, 403)).toMatchObject({ code: 'session_closed_by_operator', state: 'closed_by_operator' });
    const lapsing = await session(a, { lease_seconds: 0.5 });
    await waitFor(() => Date.parse(lapsing.expires_at) + 50 < Date.now());
    const lapsed = await refusal({ to: to.address, session: lapsing.id }, 410);
    expect(lapsed).toMatchObject({ code: 'session_lapsed', state: 'lapsed' });
    expect(lapsed.message).toMatch(new RegExp(`^session ${lapsing.id} lapsed: its lease ran out at `));
    expect(await sentCount()).toBe(before);
  });

  it('accepts a send and a directive to a principal address alike: the answers as stored, the entries pushed signed, the snapshot the unit would give', async () => {
    const c = await hubCall(hub, 'POST', '/v1/account/agents', { token: hub.humanToken, body: { label: 'principal' } });
    const p = { id: c.body.agent.id as string, token: c.body.token as string };
    const to = `agent:${p.id}`;
    const mine = await session(a, { lease_seconds: 60 });
    // Never drained nor connected: unknown.
    const r = await send({ to, intent: 'task', text: 'do "it"', session: mine.id, idempotency_key: 'k-principal' });
    expect(r.status, r.text).toBe(202);
    const m = r.body.message;
    expect(m).toEqual({
      id: m.id,
      from: `agent:${a.id}#${mine.id}`,
      to,
      intent: 'task',
      text: 'do "it"',
      created_at: m.created_at,
      state: 'queued',
      track: [{ state: 'queued', at: m.created_at }],
      destination: { address: to, snapshot: 'unknown' },
    });
    expect(r.body.session.id).toBe(mine.id);
    expect((await hubCall(hub, 'GET', `/v1/messages/${m.id}`, { token: a.token })).body.message).toEqual(m);
    // Its key replays, and conflicts, as a session send's.
    expect((await send({ to, intent: 'task', text: 'do "it"', session: mine.id, idempotency_key: 'k-principal' })).status).toBe(200);
    expect((await refusal({ to, idempotency_key: 'k-principal' }, 409)).code).toBe('idempotency_conflict');
    const d = await hubCall(hub, 'POST', '/v1/directives', { token: hub.humanToken, body: { to, text: 'halt' } });
    expect(d.status, d.text).toBe(202);
    expect(d.body.message.destination).toEqual({ address: to, snapshot: 'unknown' });
    expect((await hubCall(hub, 'GET', `/v1/messages/${d.body.message.id}`, { token: hub.humanToken })).body.message).toEqual(d.body.message);
    // A session of the agent streaming: the principal mail is pushed to it (claimed), and the next send finds the agent online.
    const s = await session(p);
    const conn = await openSse(`${hub.url}/v1/inbox/stream?session=${s.id}`, { token: p.token });
    try {
      const entries = async (n: number) => {
        await waitFor(() => conn.events.filter((e) => e.event === 'entries').flatMap((e) => JSON.parse(e.data).messages).length >= n);
        return conn.events
          .filter((e) => e.event === 'entries')
          .flatMap((e) => JSON.parse(e.data).messages as Array<{ entry: Record<string, unknown>; signature: string }>);
      };
      const pushed = await entries(2);
      for (const x of pushed) expect(verifyMac(hub.signingKey, x.signature, x.entry)).toBe(true);
      expect(pushed.map((x) => x.entry)).toEqual([
        { id: pushed[0]!.entry.id, kind: 'message', from: m.from, to, created_at: m.created_at, message_id: m.id, intent: 'task', text: 'do "it"' },
        {
          id: pushed[1]!.entry.id,
          kind: 'directive',
          from: d.body.message.from,
          to,
          created_at: d.body.message.created_at,
          text: 'halt',
          thread_id: d.body.message.id,
        },
      ]);
      const online = await send({ to });
      expect(online.status, online.text).toBe(202);
      expect(online.body.message.destination).toEqual({ address: to, snapshot: 'online' });
    } finally {
      conn.close();
    }
  });

  it('stores every shape of the one-statement send as its own, sent in turn and again in reverse (a statement made once per shape)', async () => {
    // Fresh agents: their mailboxes hold only what this test sends.
    const mint = async (label: string) => {
      const c = await hubCall(hub, 'POST', '/v1/account/agents', { token: hub.humanToken, body: { label } });
      return { id: c.body.agent.id as string, token: c.body.token as string };
    };
    const x = await mint('shapes-sender');
    const y = await mint('shapes-recipient');
    const xs = await session(x, { lease_seconds: 60 });
    const ys = await session(y, { lease_seconds: 60 });
    const principal = `agent:${y.id}`;
    type Sent = { id: string; to: string; kind: string; text: string; key: string | null; token: string; body: Record<string, unknown> };
    let n = 0;
    /** One send of a shape: to a session or the principal address, with a key, with the sender's session; or a directive; or a response. */
    const shapes: Array<() => Promise<Sent>> = [];
    for (const to of [ys.address, principal])
      for (const keyed of [false, true])
        for (const leased of [false, true])
          shapes.push(async () => {
            const text = `shape ${++n}: ${to === principal ? 'principal' : 'session'}${keyed ? ' key' : ''}${leased ? ' lease' : ''}`;
            const key = keyed ? `k-shape-${n}` : null;
            const body = { to, intent: 'notify', text, ...(key === null ? {} : { idempotency_key: key }), ...(leased ? { session: xs.id } : {}) };
            const r = await hubCall(hub, 'POST', '/v1/messages', { token: x.token, body });
            expect(r.status, r.text).toBe(202);
            expect(r.body.message).toMatchObject({ from: leased ? xs.address : `agent:${x.id}`, to, intent: 'notify', text });
            expect(r.body.session?.id, text).toBe(leased ? xs.id : undefined);
            return { id: r.body.message.id, to, kind: 'message', text, key, token: x.token, body };
          });
    for (const to of [ys.address, principal])
      shapes.push(async () => {
        const text = `shape ${++n}: directive to ${to === principal ? 'principal' : 'session'}`;
        const r = await hubCall(hub, 'POST', '/v1/directives', { token: hub.humanToken, body: { to, text } });
        expect(r.status, r.text).toBe(202);
        expect(r.body.message).toMatchObject({ to, intent: 'directive', text });
        return { id: r.body.message.id, to, kind: 'directive', text, key: null, token: hub.humanToken, body: {} };
      });
    for (const asked of [ys, null])
      for (const leased of [false, true])
        shapes.push(async () => {
          const ask = await hubCall(hub, 'POST', '/v1/messages', {
            token: y.token,
            body: { to: `agent:${x.id}`, intent: 'ask', text: `ask ${++n}`, ...(asked === null ? {} : { session: asked.id }) },
          });
          expect(ask.status, ask.text).toBe(202);
          const text = `shape ${n}: response to ${asked === null ? 'principal' : 'session'}${leased ? ' lease' : ''}`;
          const r = await hubCall(hub, 'POST', `/v1/messages/${ask.body.message.id}/respond`, {
            token: x.token,
            body: { text, ...(leased ? { session: xs.id } : {}) },
          });
          expect(r.status, r.text).toBe(201);
          const to = asked === null ? principal : ys.address;
          expect(r.body.message).toMatchObject({ to, intent: 'response', text, in_reply_to: ask.body.message.id, state: 'queued' });
          expect(r.body.session?.id, text).toBe(leased ? xs.id : undefined);
          const answered = await hubCall(hub, 'GET', `/v1/messages/${ask.body.message.id}`, { token: y.token });
          expect(answered.body.message.response).toEqual({ message_id: r.body.message.id, text, at: r.body.message.created_at });
          return { id: r.body.message.id, to, kind: 'response', text, key: null, token: x.token, body: {} };
        });
    const sent: Sent[] = [];
    for (const shape of [...shapes, ...[...shapes].reverse()]) sent.push(await shape());
    for (const m of sent) {
      const stored = await hubCall(hub, 'GET', `/v1/messages/${m.id}`, { token: m.token });
      expect(stored.body.message, m.text).toMatchObject({ id: m.id, to: m.to, text: m.text, destination: { address: m.to } });
      // A keyed send replays as itself.
      if (m.key !== null) expect((await hubCall(hub, 'POST', '/v1/messages', { token: x.token, body: m.body })).body.message.id, m.text).toBe(m.id);
    }
    // Each entry in its own mailbox, once, as sent: the principal mailbox's drain reads its own alone,
    // the session's reads its own and the principal mail it may claim.
    const drained = async (query: string) =>
      ((await hubCall(hub, 'GET', `/v1/inbox${query}`, { token: y.token })).body.messages as Array<{ entry: Record<string, unknown> }>).map((d) => d.entry);
    const byId = (e: Record<string, unknown>) => (e.kind === 'directive' ? e.thread_id : e.message_id);
    const ids = (ms: Sent[]) => ms.map((m) => m.id).sort();
    const inPrincipal = await drained('?limit=1000');
    expect(inPrincipal.map(byId).sort()).toEqual(ids(sent.filter((m) => m.to === principal)));
    const inSession = await drained(`?session=${ys.id}&limit=1000`);
    expect(inSession.map(byId).sort()).toEqual(ids(sent));
    for (const e of inSession) {
      const m = sent.find((s) => s.id === byId(e))!;
      expect(e, m.text).toMatchObject({ kind: m.kind, to: m.to, text: m.text });
    }
  });

  it('answers a response as the unit did, to a live asker session, to a principal asker and bounced; every refusal word for word', async () => {
    const respond = (id: string, body: Record<string, unknown>, token = b.token) => hubCall(hub, 'POST', `/v1/messages/${id}/respond`, { token, body });
    const asker = await session(a);
    const responder = await session(b, { lease_seconds: 60 });
    const ask = (await send({ to: `agent:${b.id}`, intent: 'ask', text: 'ping?', session: asker.id })).body.message;
    const r = await respond(ask.id, { text: 'pong "ok"', session: responder.id });
    expect(r.status, r.text).toBe(201);
    const m = r.body.message;
    expect(m).toEqual({
      id: m.id,
      from: `agent:${b.id}#${responder.id}`,
      to: asker.address,
      intent: 'response',
      text: 'pong "ok"',
      created_at: m.created_at,
      state: 'queued',
      track: [{ state: 'queued', at: m.created_at }],
      destination: { address: asker.address, snapshot: 'unknown' },
      in_reply_to: ask.id,
    });
    expect(r.body.session.id).toBe(responder.id);
    expect((await hubCall(hub, 'GET', `/v1/messages/${m.id}`, { token: b.token })).body.message).toEqual(m);
    // The ask is answered with it.
    expect((await hubCall(hub, 'GET', `/v1/messages/${ask.id}`, { token: a.token })).body.message.response).toEqual({
      message_id: m.id,
      text: 'pong "ok"',
      at: m.created_at,
    });
    const c = await openSse(`${hub.url}/v1/inbox/stream?session=${asker.id}`, { token: a.token });
    try {
      // The asker's stream is pushed receipts of earlier tests too (principal mail it claims).
      const pushed = () =>
        c.events
          .filter((e) => e.event === 'entries')
          .flatMap((e) => JSON.parse(e.data).messages as Array<{ entry: Record<string, unknown>; signature: string }>);
      const { entry, signature } = await waitFor(() => pushed().find((x) => x.entry.message_id === m.id));
      expect(verifyMac(hub.signingKey, signature, entry)).toBe(true);
      expect(entry).toEqual({
        id: entry.id,
        kind: 'response',
        from: m.from,
        to: asker.address,
        created_at: m.created_at,
        message_id: m.id,
        in_reply_to: ask.id,
        text: 'pong "ok"',
      });
    } finally {
      c.close();
    }
    // Answered already; not an ask; not addressed to this agent; no such message.
    expect((await respond(ask.id, { text: 'again' })).body.error).toEqual({
      code: 'already_responded',
      message: `message ${ask.id} already has a response (${m.id})`,
      response_id: m.id,
    });
    const note = (await send({ to: `agent:${b.id}`, text: 'fyi' })).body.message;
    expect((await respond(note.id, { text: 'x' })).body.error).toEqual({
      code: 'not_respondable',
      message: `message ${note.id} is a notify; only an ask or a task can be answered`,
    });
    for (const [id, token, who] of [
      [note.id, a.token, a.id],
      ['msg_0123456789abcdef01234567', b.token, b.id],
    ] as const) {
      const wrong = await respond(id, { text: 'x' }, token);
      expect(wrong.status).toBe(404);
      expect(wrong.body.error).toEqual({ code: 'message_not_found', message: `no message ${id} addressed to agent ${who}` });
    }
    // The responder's session not presentable: refused, the ask left unanswered.
    const principalAsk = (await send({ to: `agent:${b.id}`, intent: 'task', text: 'do?' })).body.message;
    const closed = await session(b);
    expect((await hubCall(hub, 'POST', `/v1/sessions/${closed.id}/close`, { token: b.token })).status).toBe(200);
    const refused = await respond(principalAsk.id, { text: 'x', session: closed.id });
    expect(refused.status).toBe(410);
    expect(refused.body.error).toEqual({ code: 'session_closed', message: `session ${closed.id} was closed by its agent`, state: 'closed' });
    // An ask with no session: the response goes to the asker's principal mailbox.
    const toPrincipal = await respond(principalAsk.id, { text: 'done' });
    expect(toPrincipal.status, toPrincipal.text).toBe(201);
    expect(toPrincipal.body.message).toMatchObject({ to: `agent:${a.id}`, state: 'queued', destination: { address: `agent:${a.id}` } });
    // Racing responses: one is taken, the others are already_responded.
    const raced = (await send({ to: `agent:${b.id}`, intent: 'ask', text: 'race?' })).body.message;
    const answers = await Promise.all(Array.from({ length: 6 }, (_, i) => respond(raced.id, { text: `answer ${i}` })));
    expect(answers.map((x) => x.status).sort()).toEqual([201, 409, 409, 409, 409, 409]);
    // The asking session ended: the response bounces at once (the unit), the responder gets the receipt.
    const gone = await session(a);
    const late = (await send({ to: `agent:${b.id}`, intent: 'ask', text: 'still there?', session: gone.id })).body.message;
    expect((await hubCall(hub, 'POST', `/v1/sessions/${gone.id}/close`, { token: a.token })).status).toBe(200);
    const bounced = await respond(late.id, { text: 'too late' });
    expect(bounced.status, bounced.text).toBe(201);
    expect(bounced.body.message).toMatchObject({ state: 'bounced', prior: 'queued', destination: { address: gone.address, snapshot: 'offline' } });
  });
});
