import { describe, expect, it } from 'vitest';
import { twoInstances } from '../../helpers/cluster.js';
import { hubCall, type TestHub } from '../../helpers/hub.js';
import { waitFor } from '../../helpers/wait.js';

// Issue 14: each instance remembers the tokens it let in (OH_HAI_HUB_CREDENTIAL_CACHE_MS); a
// revocation or a change of the messaging switch on ANOTHER instance makes it forget (a
// `credentials` NOTIFY). The bound here is ten minutes, so only that notification can explain
// B's refusal; the deadline is the NOTIFY's delivery, not the bound.
describe('a credential changed on one instance is forgotten by the others (PostgreSQL)', () => {
  const pair = twoInstances([], { OH_HAI_HUB_CREDENTIAL_CACHE_MS: '600000' });

  const send = (h: TestHub, token: string, to: string) =>
    hubCall(h, 'POST', '/v1/messages', { token, body: { to: `agent:${to}`, intent: 'notify', text: 'hi' } });

  it('revoked through A: refused on A at once and on B as soon as the notification arrives', async () => {
    const [a, b] = [pair.a(), pair.b()];
    const agent = await a.mintAgent('revoked-elsewhere');
    for (const h of [a, b, b]) expect((await send(h, agent.token, agent.id)).status).toBe(202);
    const revoked = await hubCall(a, 'POST', `/v1/account/agents/${agent.id}/revoke`, { token: a.humanToken });
    expect(revoked.status, revoked.text).toBe(200);
    expect((await send(a, agent.token, agent.id)).status).toBe(401);
    await waitFor(async () => (await send(b, agent.token, agent.id)).status === 401, { timeoutMs: 10_000, what: 'B refuses the revoked token' });
  });

  it('messaging switched off through A: B refuses the next sends of a token it remembers; switched on, B accepts them', async () => {
    const [a, b] = [pair.a(), pair.b()];
    const agent = await a.mintAgent('switch-elsewhere');
    for (let i = 0; i < 2; i++) expect((await send(b, agent.token, agent.id)).status).toBe(202);
    try {
      expect((await hubCall(a, 'PATCH', '/v1/account', { token: a.humanToken, body: { agent_messaging: false } })).status).toBe(200);
      await waitFor(async () => (await send(b, agent.token, agent.id)).status === 403, { timeoutMs: 10_000, what: 'B refuses sends' });
    } finally {
      expect((await hubCall(a, 'PATCH', '/v1/account', { token: a.humanToken, body: { agent_messaging: true } })).status).toBe(200);
    }
    await waitFor(async () => (await send(b, agent.token, agent.id)).status === 202, { timeoutMs: 10_000, what: 'B accepts sends again' });
  });
});
