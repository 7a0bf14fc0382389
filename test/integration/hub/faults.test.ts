import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAddress, parseSignature, validateEntry, verifyMac } from '../../../src/hub/contract/index.js';
import { hubCall, startHub, type TestHub } from '../../helpers/hub.js';
import { openSse } from './sse.js';

// Fault injection (§11): off unless named; status, delay, drop and tampered deliveries.
describe('reference Hub: fault injection', () => {
  let hub: TestHub;
  let a: { id: string; token: string };
  let b: { id: string; token: string };

  beforeAll(async () => {
    hub = await startHub({ faults: true, args: ['--stream-max-hold-seconds', '5'] });
    a = await hub.mintAgent('sender');
    b = await hub.mintAgent('target');
  });
  afterAll(async () => {
    await hub.dispose();
  });

  const session = async () =>
    (await hubCall(hub, 'POST', '/v1/sessions', { token: b.token, body: { client_key: `ck-${Math.random()}` } })).body.session as {
      id: string;
      address: string;
    };
  const send = (to: string, text = 'payload') => hubCall(hub, 'POST', '/v1/messages', { token: a.token, body: { to, intent: 'notify', text } });
  const drain = async (sess: string) =>
    (await hubCall(hub, 'GET', `/v1/inbox?session=${sess}`, { token: b.token })).body.messages as { entry: any; signature: string }[];

  it('announces itself and only takes rules from the human token, validated', async () => {
    expect(hub.output().stdout).toMatch(/fault injection is ON/);
    expect((await hubCall(hub, 'POST', '/v1/_faults', { token: a.token, body: { rules: [] } })).status).toBe(403);
    const bad = await hubCall(hub, 'POST', '/v1/_faults', { token: hub.humanToken, body: { rules: [{ class: 'drain', action: 'explode' }] } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toMatch(/action/);
    const noTamper = await hubCall(hub, 'POST', '/v1/_faults', {
      token: hub.humanToken,
      body: { rules: [{ class: 'ack', action: 'tamper', tamper: 'stale_t' }] },
    });
    expect(noTamper.status).toBe(400);
  });

  it('fails the next n matching requests with the given status, then recovers', async () => {
    const s = await session();
    await hub.faults([{ class: 'drain', action: 'status', status: 503, count: 2 }]);
    for (let i = 0; i < 2; i++) {
      const r = await hubCall(hub, 'GET', `/v1/inbox?session=${s.id}`, { token: b.token });
      expect(r.status).toBe(503);
      expect(r.body.error.code).toBe('unavailable');
    }
    // Other classes were never affected, and the third drain is healthy.
    expect((await hubCall(hub, 'GET', '/v1/capability')).status).toBe(200);
    expect((await hubCall(hub, 'GET', `/v1/inbox?session=${s.id}`, { token: b.token })).status).toBe(200);
    await hub.faults([{ class: 'any', action: 'status', status: 500 }]);
    expect((await hubCall(hub, 'GET', '/v1/capability')).status).toBe(500);
    expect((await hubCall(hub, 'POST', '/v1/inbox/ack', { token: b.token, body: {} })).status).toBe(500);
    await hub.faults([]);
    expect((await hubCall(hub, 'GET', '/v1/capability')).status).toBe(200);
  });

  it('delays a request of the named class while other requests are answered', async () => {
    await hub.faults([{ class: 'capability', action: 'delay', delay_ms: 2000, count: 1 }]);
    let settled = false;
    const slow = hubCall(hub, 'GET', '/v1/capability').finally(() => (settled = true));
    const quick = await hubCall(hub, 'GET', '/v1/whoami', { token: a.token });
    expect(quick.status).toBe(200);
    expect(settled).toBe(false);
    expect((await slow).status).toBe(200);
  });

  it('drops the connection: a plain request gets no answer; a stream gets open and then a dead socket', async () => {
    await hub.faults([{ class: 'messages', action: 'drop', count: 1 }]);
    await expect(send(`agent:${b.id}`)).rejects.toThrow();
    const s = await session();
    await send(s.address, 'kept for the next connect');
    await hub.faults([{ class: 'stream', action: 'drop', count: 1 }]);
    const c = await openSse(`${hub.url}/v1/inbox/stream?session=${s.id}`, { token: b.token });
    await c.ended;
    expect(c.events.map((e) => e.event)).toEqual(['open']);
    const next = await openSse(`${hub.url}/v1/inbox/stream?session=${s.id}`, { token: b.token });
    const e = await next.next((x) => x.event === 'entries');
    expect(JSON.parse(e.data).messages[0].entry.text).toBe('kept for the next connect');
    next.close();
  });

  /** Two entries queued; a tamper rule with count 1 alters only the first delivery of the next drain. */
  async function tampered(mode: string) {
    const s = await session();
    await send(s.address, 'first');
    await send(s.address, 'second');
    const before = await drain(s.id);
    await hub.faults([{ class: 'drain', action: 'tamper', tamper: mode, count: 1 } as never]);
    const [bad, good] = await drain(s.id);
    const clean = await drain(s.id);
    expect(good!.entry.text).toBe('second');
    expect(validateEntry(good!.entry).ok).toBe(true);
    expect(verifyMac(hub.signingKey, good!.signature, good!.entry)).toBe(true);
    for (const d of clean) expect(validateEntry(d.entry).ok && parseSignature(d.signature).ok).toBe(true);
    return { s, bad: bad!, before };
  }

  it('tamper signature_syntax breaks the header syntax of one delivery', async () => {
    const { bad } = await tampered('signature_syntax');
    expect(parseSignature(bad.signature).ok).toBe(false);
  });

  it('tamper stale_t signs one delivery with t far in the past', async () => {
    const { bad } = await tampered('stale_t');
    const sig = parseSignature(bad.signature);
    expect(sig.ok).toBe(true);
    expect(sig.ok && sig.value.t < Date.now() / 1000 - 3600).toBe(true);
    expect(verifyMac(hub.signingKey, bad.signature, bad.entry)).toBe(true);
  });

  it("tamper replay_jti reuses the previous delivery's jti", async () => {
    const { bad, before } = await tampered('replay_jti');
    const prev = parseSignature(before[before.length - 1]!.signature);
    const now = parseSignature(bad.signature);
    expect(prev.ok && now.ok && now.value.jti === prev.value.jti).toBe(true);
    expect(verifyMac(hub.signingKey, bad.signature, bad.entry)).toBe(true);
  });

  it('tamper cross_type_field and unknown_field make one entry fail the §7 shape, signed as sent', async () => {
    const cross = (await tampered('cross_type_field')).bad;
    const v1 = validateEntry(cross.entry);
    expect(v1.ok).toBe(false);
    expect(!v1.ok && v1.reason).toMatch(/status/);
    expect(verifyMac(hub.signingKey, cross.signature, cross.entry)).toBe(true);
    const unknown = (await tampered('unknown_field')).bad;
    expect(unknown.entry.x_extra).toBeDefined();
    expect(validateEntry(unknown.entry).ok).toBe(false);
  });

  it('tamper wrong_agent and wrong_session readdress one entry', async () => {
    const wa = await tampered('wrong_agent');
    const addrA = parseAddress(wa.bad.entry.to);
    expect(addrA.ok && addrA.value.agentId !== b.id).toBe(true);
    const ws = await tampered('wrong_session');
    const addrS = parseAddress(ws.bad.entry.to);
    expect(addrS.ok && addrS.value.agentId === b.id && addrS.value.sessionId !== ws.s.id).toBe(true);
  });

  it('tampers a stream push too', async () => {
    const s = await session();
    await hub.faults([{ class: 'stream', action: 'tamper', tamper: 'unknown_field', count: 1 }]);
    const c = await openSse(`${hub.url}/v1/inbox/stream?session=${s.id}`, { token: b.token });
    await c.next((e) => e.event === 'open');
    await send(s.address, 'pushed and tampered');
    const e = await c.next((x) => x.event === 'entries');
    expect(JSON.parse(e.data).messages[0].entry.x_extra).toBeDefined();
    c.close();
  });
});
