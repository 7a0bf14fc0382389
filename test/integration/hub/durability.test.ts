import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseSignature } from '../../../src/hub/contract/index.js';
import { hubCall, startHub, type TestHub } from '../../helpers/hub.js';
import { waitFor } from '../../helpers/wait.js';

// Kill -9 the Hub with mail in every state and restart it on the same port and data dir:
// nothing queued, delivered or acknowledged is lost, and leases run on stored instants.
describe('reference Hub: kill -9 and restart', () => {
  let hub: TestHub;

  beforeAll(async () => {
    hub = await startHub({ args: ['--lease-min-seconds', '0.5'] });
  });
  afterAll(async () => {
    await hub.dispose();
  });

  it('keeps every message state, tokens and leases across a SIGKILL', async () => {
    const a = await hub.mintAgent('sender');
    const b = await hub.mintAgent('recipient');
    const reg = async (lease: number) =>
      (await hubCall(hub, 'POST', '/v1/sessions', { token: b.token, body: { client_key: `ck-${lease}`, lease_seconds: lease } })).body.session;
    const long = await reg(600);
    const short = await reg(1.5);
    const send = async (to: string, text: string) =>
      (await hubCall(hub, 'POST', '/v1/messages', { token: a.token, body: { to, intent: 'notify', text } })).body.message.id as string;
    const queued = await send(long.address, 'queued');
    const delivered = await send(long.address, 'delivered');
    const acknowledged = await send(long.address, 'acknowledged');
    const doomed = await send(short.address, 'doomed');
    // Drain the long session without the queued one being acknowledged or marked.
    const drained = (await hubCall(hub, 'GET', `/v1/inbox?session=${long.id}`, { token: b.token })).body.messages as { entry: any }[];
    const idOf = (m: string) => drained.find((d) => d.entry.message_id === m)!.entry.id as string;
    await hubCall(hub, 'POST', '/v1/inbox/ack', { token: b.token, body: { delivered: [idOf(delivered)], acknowledged: [idOf(acknowledged)] } });
    const longBefore = (await hubCall(hub, 'GET', `/v1/sessions/${long.id}`, { token: b.token })).body.session;

    await hub.kill('SIGKILL');
    expect(hub.proc.signalCode).toBe('SIGKILL');
    // Let the short lease run out while the Hub is down.
    await waitFor(() => Date.now() > Date.parse(short.expires_at) + 200, { what: 'the short lease to pass while the Hub is down' });
    await hub.restart();

    const state = async (id: string) => (await hubCall(hub, 'GET', `/v1/messages/${id}`, { token: a.token })).body.message;
    expect((await state(queued)).state).toBe('queued');
    expect((await state(delivered)).state).toBe('delivered');
    expect((await state(acknowledged)).state).toBe('acknowledged');
    // The short session lapsed at its stored instant, not at restart + lease; its mail bounced.
    const shortNow = (await hubCall(hub, 'GET', `/v1/sessions/${short.id}`, { token: b.token })).body.session;
    expect(shortNow.state).toBe('lapsed');
    expect(shortNow.closed_at).toBe(short.expires_at);
    expect(await state(doomed)).toMatchObject({ state: 'bounced', prior: 'queued' });
    const receipts = (await hubCall(hub, 'GET', '/v1/inbox', { token: a.token })).body.messages as { entry: any }[];
    expect(receipts.map((d) => [d.entry.message_id, d.entry.status])).toEqual(
      expect.arrayContaining([
        [acknowledged, 'acknowledged'],
        [doomed, 'bounced'],
      ]),
    );
    // The long session keeps its lease exactly as stored; unacknowledged mail is redelivered.
    const longNow = (await hubCall(hub, 'GET', `/v1/sessions/${long.id}`, { token: b.token })).body.session;
    expect(longNow).toMatchObject({ state: 'active', expires_at: longBefore.expires_at });
    const again = (await hubCall(hub, 'GET', `/v1/inbox?session=${long.id}`, { token: b.token })).body.messages as { entry: any }[];
    expect(again.map((d) => d.entry.text).sort()).toEqual(['delivered', 'queued']);
    expect((await hubCall(hub, 'GET', '/v1/whoami', { token: hub.humanToken })).status).toBe(200);
  });

  it('stops cleanly on SIGTERM with exit 0', async () => {
    const code = await hub.stop();
    expect(code).toBe(0);
    expect(hub.output().stdout).toMatch(/hub: stopped \(SIGTERM\)/);
    await hub.restart();
    expect((await hubCall(hub, 'GET', '/v1/capability')).status).toBe(200);
  });
});

describe('reference Hub: --clock-offset-ms', () => {
  it("puts every instant and every signature's t on the Hub's own clock", async () => {
    const hub = await startHub({ args: ['--clock-offset-ms', String(3 * 3600 * 1000)] });
    try {
      const cap = await hubCall(hub, 'GET', '/v1/capability');
      expect(Date.parse(cap.body.server_time)).toBeGreaterThan(Date.now() + 2 * 3600 * 1000);
      const a = await hub.mintAgent('clock');
      const s = (await hubCall(hub, 'POST', '/v1/sessions', { token: a.token, body: { client_key: 'ck', lease_seconds: 120 } })).body.session;
      expect(Date.parse(s.expires_at) - Date.parse(s.last_renewed_at)).toBe(120_000);
      expect(Date.parse(s.last_renewed_at)).toBeGreaterThan(Date.now() + 2 * 3600 * 1000);
      await hubCall(hub, 'POST', '/v1/directives', { token: hub.humanToken, body: { to: s.address, text: 'tick' } });
      const d = (await hubCall(hub, 'GET', `/v1/inbox?session=${s.id}`, { token: a.token })).body.messages[0];
      const sig = parseSignature(d.signature);
      expect(sig.ok && sig.value.t > Date.now() / 1000 + 2 * 3600).toBe(true);
    } finally {
      await hub.dispose();
    }
  });
});
