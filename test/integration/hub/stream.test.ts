import { createParser } from 'eventsource-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateEntry, verifyMac } from '../../../src/hub/contract/index.js';
import { hubCall, startHub, type TestHub } from '../../helpers/hub.js';
import { waitFor } from '../../helpers/wait.js';
import { openSse, type SseEvent } from './sse.js';

// SSE (§5): framing, pushes, keep-alive comments, the hold bound and the close events.
describe('reference Hub: the SSE stream', () => {
  let hub: TestHub;
  let a: { id: string; token: string };
  let b: { id: string; token: string };

  beforeAll(async () => {
    hub = await startHub({ args: ['--lease-min-seconds', '0.5', '--stream-max-hold-seconds', '1.5', '--keepalive-seconds', '0.2'] });
    a = await hub.mintAgent('sender');
    b = await hub.mintAgent('streamer');
  });
  afterAll(async () => {
    await hub.dispose();
  });

  const session = async (body: Record<string, unknown> = {}) =>
    (await hubCall(hub, 'POST', '/v1/sessions', { token: b.token, body: { client_key: `ck-${Math.random()}`, ...body } })).body.session as {
      id: string;
      address: string;
      expires_at: string;
    };
  const stream = (id: string, headers?: Record<string, string>) => openSse(`${hub.url}/v1/inbox/stream?session=${id}`, { token: b.token, headers });
  const send = (to: string, text: string) => hubCall(hub, 'POST', '/v1/messages', { token: a.token, body: { to, intent: 'notify', text } });
  const deliveries = (e: SseEvent) => JSON.parse(e.data).messages as { entry: any; signature: string }[];

  it('opens with the lease and the hold, pushes what is pending, then what arrives', async () => {
    const s = await session({ lease_seconds: 30 });
    await send(s.address, 'before connect');
    const c = await stream(s.id);
    expect(c.status).toBe(200);
    expect(c.headers['content-type']).toMatch(/^text\/event-stream/);
    const open = JSON.parse((await c.next((e) => e.event === 'open')).data);
    expect(open).toMatchObject({ session: s.id, lease_seconds: 30, hold_ms: 1500, stream_max_hold_seconds: 1.5 });
    expect(open.expires_at > s.expires_at).toBe(true); // the connect renewed the lease
    const first = await c.next((e) => e.event === 'entries');
    expect(deliveries(first).map((d) => d.entry.text)).toEqual(['before connect']);
    await send(s.address, 'after connect');
    const pushed = await c.next((e) => e.event === 'entries' && deliveries(e).some((d) => d.entry.text === 'after connect'));
    const d = deliveries(pushed)[0]!;
    expect(validateEntry(d.entry).ok).toBe(true);
    expect(verifyMac(hub.signingKey, d.signature, d.entry)).toBe(true);
    c.close();
  });

  it('carries U+2028/U+2029 raw inside one data: line and never splits the record', async () => {
    const s = await session();
    const text = 'line\u2028separator\u2029paragraph — ünïcödé';
    await send(s.address, text);
    const c = await stream(s.id);
    const e = await c.next((x) => x.event === 'entries');
    expect(deliveries(e)[0]!.entry.text).toBe(text);
    const dataLine = c
      .raw()
      .split('\n')
      .find((l) => l.startsWith('data: {"messages"'));
    expect(dataLine).toContain('\u2028');
    expect(dataLine).toContain('\u2029');
    expect(JSON.parse(dataLine!.slice('data: '.length)).messages[0].entry.text).toBe(text);
    c.close();
  });

  it('parses the same events from the stream with CRLF line ends (the test parser is a real SSE parser)', async () => {
    const s = await session();
    await send(s.address, 'crlf');
    const c = await stream(s.id);
    await c.next((x) => x.event === 'reconnect');
    await c.ended;
    const events: SseEvent[] = [];
    const parser = createParser({ onEvent: (m) => events.push({ event: m.event ?? 'message', data: m.data }) });
    const converted = c.raw().replace(/\n/g, '\r\n');
    // Feed in awkward chunks so many a CR and its LF land in different feeds.
    for (let i = 0; i < converted.length; i += 7) parser.feed(converted.slice(i, i + 7));
    expect(c.events.map((e) => e.event)).toEqual(['open', 'entries', 'reconnect']);
    expect(events).toEqual(c.events);
  });

  it('sends a keep-alive comment and ends every hold with reconnect {"reason":"hold_bound"}', async () => {
    const s = await session();
    const c = await stream(s.id);
    const reconnect = await c.next((e) => e.event === 'reconnect');
    expect(JSON.parse(reconnect.data)).toEqual({ reason: 'hold_bound' });
    await c.ended;
    expect(c.comments.map((x) => x.trim())).toContain('keepalive');
    expect(c.raw()).toMatch(/\n: keepalive\n\n/);
  });

  it('bounds the hold by the lease: hold = min(max hold, lease − min(1 s, lease/4)); each reconnect renews', async () => {
    // 1.9 s: the lease, not the 1.5 s max hold, bounds the hold, and the reconnect below has the
    // lease's last quarter, 475 ms, to reach the Hub (with a 1 s lease it had 250 ms, some of it
    // spent polling for the reconnect event).
    const s = await session({ lease_seconds: 1.9 });
    const c1 = await stream(s.id);
    const open1 = JSON.parse((await c1.next((e) => e.event === 'open')).data);
    expect(open1.hold_ms).toBe(1425);
    await c1.ended;
    expect(c1.events.at(-1)).toEqual({ event: 'reconnect', data: '{"reason":"hold_bound"}' });
    // Reconnecting at once after the bound renews the lease before it lapses.
    const c2 = await stream(s.id);
    expect(c2.status).toBe(200);
    const open2 = JSON.parse((await c2.next((e) => e.event === 'open')).data);
    expect(open2.expires_at > open1.expires_at).toBe(true);
    c2.close();
  });

  it('pushes again on the next connect whatever was not acknowledged', async () => {
    const s = await session();
    await send(s.address, 'ack me later');
    const c1 = await stream(s.id);
    const id = deliveries(await c1.next((e) => e.event === 'entries'))[0]!.entry.id;
    c1.close();
    const c2 = await stream(s.id);
    const again = deliveries(await c2.next((e) => e.event === 'entries'))[0]!;
    expect(again.entry.id).toBe(id);
    c2.close();
    await hubCall(hub, 'POST', '/v1/inbox/ack', { token: b.token, body: { session: s.id, acknowledged: [id] } });
    const c3 = await stream(s.id);
    await c3.next((e) => e.event === 'reconnect');
    expect(c3.events.filter((e) => e.event === 'entries')).toEqual([]);
  });

  it('claims a principal entry for the stream that receives it first', async () => {
    const s1 = await session();
    const s2 = await session();
    const c = await stream(s1.id);
    await c.next((e) => e.event === 'open');
    const sent = await send(`agent:${b.id}`, 'principal push');
    const pushed = await c.next((e) => e.event === 'entries' && deliveries(e).some((d) => d.entry.message_id === sent.body.message.id));
    expect(pushed).toBeTruthy();
    const other = await hubCall(hub, 'GET', `/v1/inbox?session=${s2.id}`, { token: b.token });
    expect(other.body.messages.some((d: { entry: { message_id?: string } }) => d.entry.message_id === sent.body.message.id)).toBe(false);
    c.close();
  });

  it('ends the stream with event: closed when its agent closes the session; the next connect is 410', async () => {
    const s = await session();
    const c = await stream(s.id);
    await c.next((e) => e.event === 'open');
    await hubCall(hub, 'POST', `/v1/sessions/${s.id}/close`, { token: b.token });
    expect(JSON.parse((await c.next((e) => e.event === 'closed')).data)).toEqual({ reason: 'closed' });
    await c.ended;
    const again = await stream(s.id);
    expect(again.status).toBe(410);
    expect(JSON.parse(again.errorBody).error.code).toBe('session_closed');
  });

  // The connect's renewal statement checks its token too (one round trip): whatever it does not
  // let in is let in, or refused, as by every route, and the session's refusals are the locked path's.
  it('refuses a token or a session the connect cannot present with the answers of every route: 401, 403, 404, 409, 410', async () => {
    const refused = async (c: Promise<Awaited<ReturnType<typeof stream>>>, status: number, code: string) => {
      const r = await c;
      expect(r.status, r.errorBody).toBe(status);
      const error = JSON.parse(r.errorBody).error;
      expect(error.code).toBe(code);
      return error as { message: string; holder?: unknown };
    };
    const s = await session({ lease_seconds: 30 });
    const url = `${hub.url}/v1/inbox/stream?session=${s.id}`;
    await refused(openSse(url, { token: '', headers: { authorization: 'Basic x' } }), 401, 'unauthorized');
    await refused(openSse(url, { token: 'ohh_a_not-a-token-this-hub-minted' }), 401, 'unauthorized');
    await refused(openSse(url, { token: hub.humanToken }), 403, 'forbidden');
    // Another agent's session is not found, for that agent.
    await refused(openSse(url, { token: a.token }), 404, 'session_not_found');
    const gone = await hub.mintAgent('soon-revoked');
    const own = (await hubCall(hub, 'POST', '/v1/sessions', { token: gone.token, body: { client_key: 'ck-revoked' } })).body.session;
    expect((await hubCall(hub, 'POST', `/v1/account/agents/${gone.id}/revoke`, { token: hub.humanToken })).status).toBe(200);
    expect((await refused(openSse(`${hub.url}/v1/inbox/stream?session=${own.id}`, { token: gone.token }), 401, 'unauthorized')).message).toContain('revoked');
    // Held by a consumer of another home (registered with it just now: seen).
    const held = await session({ home: 'h-first', host: 'box-1', pid: 10 });
    const other = { 'MA2H-Consumer': 'home=h-second; host=box-2; pid=20' };
    expect((await refused(stream(held.id, other), 409, 'session_held')).holder).toMatchObject({ home: 'h-first', pid: 10 });
    const lapsing = await session({ lease_seconds: 0.5 });
    await waitFor(async () => (await hubCall(hub, 'GET', `/v1/sessions/${lapsing.id}`, { token: b.token })).body.session.state === 'lapsed');
    await refused(stream(lapsing.id), 410, 'session_lapsed');
    const stopped = await session();
    expect((await hubCall(hub, 'POST', `/v1/sessions/${stopped.id}/operator-close`, { token: hub.humanToken })).status).toBe(200);
    await refused(stream(stopped.id), 403, 'session_closed_by_operator');
    // None of them took the session: its own agent connects.
    const c = await stream(s.id);
    expect(c.status).toBe(200);
    await c.next((e) => e.event === 'open');
    c.close();
  });

  it('refuses before the stream starts with the JSON errors: 406, 400, 404, 403 messaging_disabled', async () => {
    const s = await session();
    const json = await stream(s.id, { accept: 'application/json' });
    expect(json.status).toBe(406);
    expect(JSON.parse(json.errorBody).error.code).toBe('not_acceptable');
    const none = await openSse(`${hub.url}/v1/inbox/stream`, { token: b.token });
    expect(none.status).toBe(400);
    const unknown = await stream('sess_unknown');
    expect(unknown.status).toBe(404);
    await hubCall(hub, 'PATCH', '/v1/account', { token: hub.humanToken, body: { agent_messaging: false } });
    try {
      const off = await stream(s.id);
      expect(off.status).toBe(403);
      expect(JSON.parse(off.errorBody).error.code).toBe('messaging_disabled');
    } finally {
      await hubCall(hub, 'PATCH', '/v1/account', { token: hub.humanToken, body: { agent_messaging: true } });
    }
  });
});

describe('reference Hub: a hold no longer than the keep-alive interval', () => {
  it('writes no keep-alive comment: the reconnect event at its bound is the sign of life (one write fewer per hold)', async () => {
    const hub = await startHub({ args: ['--stream-max-hold-seconds', '1', '--keepalive-seconds', '1'] });
    try {
      const b = await hub.mintAgent('held');
      const s = (await hubCall(hub, 'POST', '/v1/sessions', { token: b.token, body: { client_key: 'k' } })).body.session as { id: string };
      const c = await openSse(`${hub.url}/v1/inbox/stream?session=${s.id}`, { token: b.token });
      const reconnect = await c.next((e) => e.event === 'reconnect');
      expect(JSON.parse(reconnect.data)).toEqual({ reason: 'hold_bound' });
      await c.ended;
      expect(c.comments).toEqual([]);
    } finally {
      await hub.dispose();
    }
  });
});

describe('reference Hub: a stream that pushes', () => {
  it('writes no keep-alive comment within half an interval of a push (every hold wrote one per interval: four here)', async () => {
    const hub = await startHub({ args: ['--stream-max-hold-seconds', '5', '--keepalive-seconds', '1'] });
    try {
      const a = await hub.mintAgent('sender');
      const b = await hub.mintAgent('held');
      const s = (await hubCall(hub, 'POST', '/v1/sessions', { token: b.token, body: { client_key: 'k' } })).body.session as { id: string; address: string };
      const c = await openSse(`${hub.url}/v1/inbox/stream?session=${s.id}`, { token: b.token });
      await c.next((e) => e.event === 'open');
      // A push right after the one before until the bound: each a sign of life far inside half an interval.
      for (let n = 0; !c.isEnded(); n++) {
        await hubCall(hub, 'POST', '/v1/messages', { token: a.token, body: { to: s.address, intent: 'notify', text: `m${n}` } });
        await waitFor(() => c.isEnded() || c.events.some((e) => e.event === 'entries' && e.data.includes(`"m${n}"`)), { timeoutMs: 10_000 });
      }
      await c.ended;
      // A loaded machine may hold a push past half an interval once or twice; without the rule every beat wrote one.
      expect(c.comments.length).toBeLessThanOrEqual(1);
    } finally {
      await hub.dispose();
    }
  });
});

describe('reference Hub: stopping', () => {
  it('ends every open stream with reconnect {"reason":"shutdown"} on SIGTERM (not a bare close), then exits 0', async () => {
    const hub = await startHub({ args: ['--stream-max-hold-seconds', '60', '--keepalive-seconds', '30'] });
    try {
      const b = await hub.mintAgent('held');
      const streams = [];
      for (const key of ['one', 'two']) {
        const s = (await hubCall(hub, 'POST', '/v1/sessions', { token: b.token, body: { client_key: key } })).body.session as { id: string };
        const c = await openSse(`${hub.url}/v1/inbox/stream?session=${s.id}`, { token: b.token });
        await c.next((e) => e.event === 'open');
        streams.push(c);
      }
      expect(await hub.stop()).toBe(0);
      for (const c of streams) {
        await c.ended;
        expect(c.events.at(-1)).toEqual({ event: 'reconnect', data: '{"reason":"shutdown"}' });
      }
    } finally {
      await hub.dispose();
    }
  });
});
