import { statSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hubCall, startHub, type TestHub } from '../../helpers/hub.js';

// The plain request/response surface: capability, identity, auth, the §0 error shape for
// bad input, the agent directory, the messaging switch, the fleet.
describe('reference Hub: API surface and bad input', () => {
  let hub: TestHub;
  let agent: { id: string; token: string };

  beforeAll(async () => {
    hub = await startHub({ env: { MA2H_AGENT_TOKENS: 'cfg_one=tok_config_one_0123456789,cfg weird#id=tok_config_two_0123456789' } });
    agent = await hub.mintAgent('builder');
  });
  afterAll(async () => {
    await hub.dispose();
  });

  const expectError = (r: { status: number; body: any }, status: number, code: string) => {
    expect(r.status, JSON.stringify(r.body)).toBe(status);
    expect(r.body.error.code).toBe(code);
    expect(typeof r.body.error.message).toBe('string');
    expect(r.body.error.message.length).toBeGreaterThan(10);
  };

  it('keeps its data dir 0700 and the human token and store 0600', () => {
    expect(statSync(hub.dataDir).mode & 0o777).toBe(0o700);
    const files = hub.store === 'sqlite' ? ['human-token', 'hub.sqlite', 'hub.json'] : ['human-token', 'hub.json'];
    for (const f of files) expect(statSync(path.join(hub.dataDir, f)).mode & 0o777).toBe(0o600);
    expect(hub.output().stdout).toMatch(/created account acct_\S+; its human token is in .*human-token/);
  });

  it('serves the capability document without auth', async () => {
    const r = await hubCall(hub, 'GET', '/v1/capability');
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      protocol: 'MA2H',
      version: '0.5.0',
      inbound: { session_param: true, stream_url: '/v1/inbox/stream', max_wait_seconds: 25, stream_max_hold_seconds: 30, keepalive_seconds: 15 },
      signature_algs: ['hmac-sha256'],
      replay_window_seconds: 120,
      session: { lease_default_seconds: 900, lease_min_seconds: 60, lease_max_seconds: 3600, max_live_per_agent: 16 },
      account: { agent_directory: '/v1/account/agents' },
    });
    expect(Number.isNaN(Date.parse(r.body.server_time))).toBe(false);
  });

  it('answers whoami for both kinds of token', async () => {
    const a = await hubCall(hub, 'GET', '/v1/whoami', { token: agent.token });
    expect(a.body).toMatchObject({ kind: 'agent', agent: { id: agent.id, label: 'builder' } });
    const h = await hubCall(hub, 'GET', '/v1/whoami', { token: hub.humanToken });
    expect(h.body.kind).toBe('human');
    expect(h.body.account.id).toBe(a.body.agent.account_id);
    const cfg = await hubCall(hub, 'GET', '/v1/whoami', { token: 'tok_config_one_0123456789' });
    expect(cfg.body).toMatchObject({ kind: 'agent', agent: { id: 'cfg_one' } });
  });

  it('refuses missing, unknown and malformed credentials with 401', async () => {
    expectError(await hubCall(hub, 'GET', '/v1/whoami'), 401, 'unauthorized');
    expectError(await hubCall(hub, 'GET', '/v1/whoami', { token: 'nope' }), 401, 'unauthorized');
    expectError(await hubCall(hub, 'GET', '/v1/whoami', { headers: { authorization: 'Basic abc' } }), 401, 'unauthorized');
  });

  it('refuses the wrong kind of token with 403 forbidden', async () => {
    expectError(await hubCall(hub, 'POST', '/v1/account/agents', { token: agent.token, body: { label: 'x' } }), 403, 'forbidden');
    expectError(await hubCall(hub, 'POST', '/v1/directives', { token: agent.token, body: { to: `agent:${agent.id}`, text: 'hi' } }), 403, 'forbidden');
    expectError(await hubCall(hub, 'PATCH', '/v1/account', { token: agent.token, body: { agent_messaging: false } }), 403, 'forbidden');
    expectError(await hubCall(hub, 'POST', '/v1/sessions', { token: hub.humanToken, body: { client_key: 'k' } }), 403, 'forbidden');
    expectError(await hubCall(hub, 'GET', '/v1/inbox', { token: hub.humanToken }), 403, 'forbidden');
  });

  it('refuses a token in the query string, by name or by value', async () => {
    expectError(await hubCall(hub, 'GET', '/v1/capability?access_token=whatever'), 400, 'token_in_url');
    expectError(await hubCall(hub, 'GET', `/v1/inbox?session=${agent.token}`, { token: agent.token }), 400, 'token_in_url');
  });

  it('answers unknown routes 404 and wrong methods 405 with an Allow header', async () => {
    expectError(await hubCall(hub, 'GET', '/v1/nothing-here', { token: agent.token }), 404, 'not_found');
    // `/` is the web inbox (issue 9); any other path outside the API keeps the JSON 404.
    expectError(await hubCall(hub, 'GET', '/nothing-here'), 404, 'not_found');
    const r = await hubCall(hub, 'DELETE', '/v1/fleet', { token: agent.token });
    expectError(r, 405, 'method_not_allowed');
    expect(r.headers.get('allow')).toBe('GET');
    expectError(await hubCall(hub, 'POST', '/v1/capability'), 405, 'method_not_allowed');
  });

  it('fault injection does not exist unless the Hub was started with it', async () => {
    expectError(await hubCall(hub, 'POST', '/v1/_faults', { token: hub.humanToken, body: { rules: [] } }), 404, 'not_found');
  });

  it('refuses malformed JSON, wrong types and unknown fields with 400 naming the problem', async () => {
    const bad = await hubCall(hub, 'POST', '/v1/sessions', { token: agent.token, rawBody: '{"client_key": ', headers: { 'content-type': 'application/json' } });
    expectError(bad, 400, 'invalid_request');
    expect(bad.body.error.message).toMatch(/not valid JSON/);
    const wrongType = await hubCall(hub, 'POST', '/v1/sessions', { token: agent.token, body: { client_key: 42 } });
    expectError(wrongType, 400, 'invalid_request');
    expect(wrongType.body.error.message).toMatch(/client_key/);
    const unknown = await hubCall(hub, 'POST', '/v1/messages', {
      token: agent.token,
      body: { to: `agent:${agent.id}`, intent: 'notify', text: 'x', colour: 'red' },
    });
    expectError(unknown, 400, 'invalid_request');
    expect(unknown.body.error.message).toMatch(/colour/);
    expectError(await hubCall(hub, 'POST', '/v1/sessions', { token: agent.token, body: [1, 2] }), 400, 'invalid_request');
    expectError(await hubCall(hub, 'POST', '/v1/sessions', { token: agent.token }), 400, 'invalid_request');
    expectError(await hubCall(hub, 'GET', '/v1/inbox?limit=abc', { token: agent.token }), 400, 'invalid_request');
    expectError(await hubCall(hub, 'GET', '/v1/inbox?wait=-1', { token: agent.token }), 400, 'invalid_request');
    expectError(await hubCall(hub, 'GET', '/v1/messages?direction=sideways', { token: agent.token }), 400, 'invalid_request');
    expectError(await hubCall(hub, 'GET', '/v1/messages?before=garbage', { token: agent.token }), 400, 'invalid_request');
    const mal = await hubCall(hub, 'GET', '/v1/inbox', { token: agent.token, headers: { 'ma2h-consumer': 'home=a b; host=h; pid=1' } });
    expectError(mal, 400, 'invalid_request');
  });

  it('refuses a text over 65,536 bytes as text_too_long and a body over the cap as 413', async () => {
    const long = await hubCall(hub, 'POST', '/v1/messages', {
      token: agent.token,
      body: { to: `agent:${agent.id}`, intent: 'notify', text: 'é'.repeat(40_000) },
    });
    expectError(long, 400, 'text_too_long');
    const huge = await hubCall(hub, 'POST', '/v1/messages', { token: agent.token, rawBody: JSON.stringify({ text: 'x'.repeat(2 * 1024 * 1024) }) });
    expectError(huge, 413, 'payload_too_large');
    // The Hub is still healthy after both.
    expect((await hubCall(hub, 'GET', '/v1/capability')).status).toBe(200);
  });

  // A client that writes its whole request before reading (fetch does) must read the 413, not a
  // broken pipe: the Hub reads the refused body to its end before it answers and closes.
  it.each(['content-length', 'chunked'] as const)(
    'answers a body over the cap sent with %s only once it is in, so the writer sees the 413',
    async (framing) => {
      const body = Buffer.alloc(4 * 1024 * 1024, 'x');
      const { hostname, port } = new URL(hub.url);
      const socket = net.connect({ host: hostname, port: Number(port) });
      const answer: Buffer[] = [];
      socket.on('data', (b: Buffer) => answer.push(b));
      const ended = new Promise<void>((resolve) => socket.on('close', () => resolve()));
      const write = (b: Buffer | string) => new Promise<void>((resolve, reject) => socket.write(b, (e) => (e ? reject(e) : resolve())));
      const head = framing === 'chunked' ? 'transfer-encoding: chunked' : `content-length: ${body.length}`;
      await write(
        `POST /v1/messages HTTP/1.1\r\nhost: ${hostname}\r\nauthorization: Bearer ${agent.token}\r\ncontent-type: application/json\r\n${head}\r\n\r\n`,
      );
      const piece = 64 * 1024;
      for (let at = 0; at < body.length; at += piece) {
        const part = body.subarray(at, at + piece);
        await write(framing === 'chunked' ? Buffer.concat([Buffer.from(`${part.length.toString(16)}\r\n`), part, Buffer.from('\r\n')]) : part);
      }
      if (framing === 'chunked') await write('0\r\n\r\n');
      await ended;
      const text = Buffer.concat(answer).toString('utf8');
      expect(text.split('\r\n')[0]).toBe('HTTP/1.1 413 Payload Too Large');
      expect(text).toContain('"payload_too_large"');
    },
  );

  it('mints, lists and revokes agents; a revoked token gets 401', async () => {
    const minted = await hubCall(hub, 'POST', '/v1/account/agents', { token: hub.humanToken, body: { label: 'temp' } });
    expect(minted.status).toBe(201);
    expect(minted.body.agent).toMatchObject({ label: 'temp', revoked: false, source: 'account' });
    expect(minted.body.token).toMatch(/^ohh_a_/);
    const id = minted.body.agent.id as string;
    expect((await hubCall(hub, 'GET', '/v1/whoami', { token: minted.body.token })).status).toBe(200);
    const revoked = await hubCall(hub, 'POST', `/v1/account/agents/${id}/revoke`, { token: hub.humanToken });
    expect(revoked.status).toBe(200);
    expect(revoked.body.agent.revoked).toBe(true);
    expectError(await hubCall(hub, 'GET', '/v1/whoami', { token: minted.body.token }), 401, 'unauthorized');
    expectError(await hubCall(hub, 'POST', '/v1/account/agents/agt_nobody/revoke', { token: hub.humanToken }), 404, 'agent_not_found');
    expectError(await hubCall(hub, 'POST', '/v1/account/agents', { token: hub.humanToken, body: { label: '' } }), 400, 'invalid_request');
    const dir = await hubCall(hub, 'GET', '/v1/account/agents', { token: agent.token });
    const row = dir.body.agents.find((a: { id: string }) => a.id === id);
    expect(row).toEqual({ id, label: 'temp', revoked: true, source: 'account' });
    for (const a of dir.body.agents) expect(Object.keys(a).sort()).toEqual(['id', 'label', 'revoked', 'source']);
    expect(dir.body.agents.some((a: { source: string }) => a.source === 'config')).toBe(false);
    expectError(
      await hubCall(hub, 'POST', '/v1/messages', { token: agent.token, body: { to: `agent:${id}`, intent: 'notify', text: 'x' } }),
      404,
      'recipient_not_found',
    );
  });

  it('adds the configured token store to the directory only with include=config, ids verbatim', async () => {
    const dir = await hubCall(hub, 'GET', '/v1/account/agents?include=config', { token: hub.humanToken });
    const config = dir.body.agents.filter((a: { source: string }) => a.source === 'config');
    expect(config.map((a: { id: string }) => a.id)).toEqual(['cfg_one', 'cfg weird#id']);
    expect(config[0]).toEqual({ id: 'cfg_one', label: null, revoked: false, source: 'config' });
  });

  it('switches messaging off (sessions and sends refused) and on again', async () => {
    const off = await hubCall(hub, 'PATCH', '/v1/account', { token: hub.humanToken, body: { agent_messaging: false } });
    expect(off.status).toBe(200);
    expect(off.body.account.agent_messaging).toBe(false);
    try {
      expectError(await hubCall(hub, 'POST', '/v1/sessions', { token: agent.token, body: { client_key: 'k1' } }), 403, 'messaging_disabled');
      expectError(
        await hubCall(hub, 'POST', '/v1/messages', { token: agent.token, body: { to: `agent:${agent.id}`, intent: 'notify', text: 'x' } }),
        403,
        'messaging_disabled',
      );
      // The principal drain and directives still work, so nothing already delivered is stranded.
      expect((await hubCall(hub, 'GET', '/v1/inbox', { token: agent.token })).status).toBe(200);
      expect((await hubCall(hub, 'POST', '/v1/directives', { token: hub.humanToken, body: { to: `agent:${agent.id}`, text: 'still works' } })).status).toBe(
        202,
      );
      expect((await hubCall(hub, 'GET', '/v1/account', { token: agent.token })).body.account.agent_messaging).toBe(false);
    } finally {
      await hubCall(hub, 'PATCH', '/v1/account', { token: hub.humanToken, body: { agent_messaging: true } });
    }
    expect((await hubCall(hub, 'POST', '/v1/sessions', { token: agent.token, body: { client_key: 'k1' } })).status).toBe(201);
    expectError(await hubCall(hub, 'PATCH', '/v1/account', { token: hub.humanToken, body: { agent_messaging: 'yes' } }), 400, 'invalid_request');
  });

  it('lists live sessions in the fleet with reachability: unknown until drained, then online', async () => {
    const s = await hubCall(hub, 'POST', '/v1/sessions', { token: agent.token, body: { client_key: 'fleet-key', name: 'fleet-1' } });
    const id = s.body.session.id as string;
    let fleet = await hubCall(hub, 'GET', '/v1/fleet', { token: hub.humanToken });
    let row = fleet.body.sessions.find((r: { session_id: string }) => r.session_id === id);
    expect(row).toMatchObject({
      address: `agent:${agent.id}#${id}`,
      agent_id: agent.id,
      agent_label: 'builder',
      name: 'fleet-1',
      state: 'active',
      reachability: 'unknown',
      holder: null,
    });
    await hubCall(hub, 'GET', `/v1/inbox?session=${id}`, { token: agent.token, headers: { 'ma2h-consumer': 'home=h1; host=box; pid=77' } });
    fleet = await hubCall(hub, 'GET', '/v1/fleet', { token: agent.token });
    row = fleet.body.sessions.find((r: { session_id: string }) => r.session_id === id);
    expect(row.reachability).toBe('online');
    expect(row.holder).toEqual({ host: 'box', pid: 77 });
  });
});
