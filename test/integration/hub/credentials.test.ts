import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hubCall, startHub, type TestHub } from '../../helpers/hub.js';

// Issue 14 (a send's round trips): the Hub remembers a token it let in (OH_HAI_HUB_CREDENTIAL_CACHE_MS),
// so a busy sender's requests skip the credential read. Remembering must never outlive a change:
// here the bound is ten minutes, so only forgetting on the change can explain each refusal.
describe('remembered credentials are forgotten when a credential or the messaging switch changes', () => {
  let hub: TestHub;
  beforeAll(async () => {
    hub = await startHub({ env: { OH_HAI_HUB_CREDENTIAL_CACHE_MS: '600000' } });
  });
  afterAll(async () => {
    await hub?.dispose();
  });

  const send = (token: string, to: string) => hubCall(hub, 'POST', '/v1/messages', { token, body: { to: `agent:${to}`, intent: 'notify', text: 'hi' } });

  it('a revoked token is refused by the very next request', async () => {
    const agent = await hub.mintAgent('soon-revoked');
    for (let i = 0; i < 3; i++) expect((await send(agent.token, agent.id)).status).toBe(202);
    const revoked = await hubCall(hub, 'POST', `/v1/account/agents/${agent.id}/revoke`, { token: hub.humanToken });
    expect(revoked.status, revoked.text).toBe(200);
    const after = await send(agent.token, agent.id);
    expect(after.status, after.text).toBe(401);
    expect(after.body.error.message).toContain('revoked');
  });

  it('messaging switched off refuses the next send of a remembered token; switched on, it is accepted again', async () => {
    const agent = await hub.mintAgent('switch');
    expect((await send(agent.token, agent.id)).status).toBe(202);
    try {
      expect((await hubCall(hub, 'PATCH', '/v1/account', { token: hub.humanToken, body: { agent_messaging: false } })).status).toBe(200);
      const off = await send(agent.token, agent.id);
      expect(off.status, off.text).toBe(403);
      expect(off.body.error.code).toBe('messaging_disabled');
    } finally {
      expect((await hubCall(hub, 'PATCH', '/v1/account', { token: hub.humanToken, body: { agent_messaging: true } })).status).toBe(200);
    }
    expect((await send(agent.token, agent.id)).status).toBe(202);
  });
});
