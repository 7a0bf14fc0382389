import { describe, expect, it } from 'vitest';
import { HubClient } from '../../../src/hub/client/index.js';
import { json, usePeerClient, type PeerHandler } from './peer.js';
import type http from 'node:http';

const at = '2026-09-18T14:33:07.000Z';
const session = {
  id: 'sess_1',
  agent_id: 'agt_1',
  address: 'agent:agt_1#sess_1',
  name: null,
  state: 'active',
  lease_seconds: 900,
  expires_at: at,
  last_renewed_at: at,
  created_at: at,
  closed_at: null,
  holder: null,
};
const capability = { protocol: 'MA2H', version: '0.5.0', inbound: { session_param: true, stream_url: '/v1/inbox/stream' } };

const peerClient = usePeerClient();
const hub = (handler: PeerHandler, token: string | null = 'tok_secret') =>
  peerClient(handler, { token, consumer: { home: 'h1', host: 'box', pid: 5 }, userAgent: 'oh-hai/test' });

describe('HubClient requests', () => {
  it('sends the bearer only in the Authorization header, and none to the capability document', async () => {
    const { peer, client } = await hub((req, res) =>
      req.url === '/v1/capability' ? json(res, 200, capability) : json(res, 200, { kind: 'agent', agent: { id: 'agt_1', label: 'b', account_id: 'acct_1' } }),
    );
    const cap = await client.capability();
    const who = await client.whoami();
    expect(cap.ok && cap.value.inbound.stream_url).toBe('/v1/inbox/stream');
    expect(who.ok && who.value).toEqual({ kind: 'agent', agent: { id: 'agt_1', label: 'b', account_id: 'acct_1' } });
    const [capReq, whoReq] = peer.requests;
    expect(capReq!.headers.authorization).toBeUndefined();
    expect(whoReq!.headers.authorization).toBe('Bearer tok_secret');
    expect(whoReq!.headers['user-agent']).toBe('oh-hai/test');
    for (const r of peer.requests) expect(r.url).not.toContain('tok_secret');
  });

  it('returns status, value and the Hub Date header verbatim', async () => {
    const { peer, client } = await hub((_req, res) => json(res, 201, { session }, { date: 'Fri, 18 Sep 2026 14:33:07 GMT' }));
    const r = await client.createSession({ client_key: 'k1', name: 'b-1' });
    expect(r).toEqual({ ok: true, status: 201, value: session, serverDate: 'Fri, 18 Sep 2026 14:33:07 GMT' });
    expect(JSON.parse(peer.requests[0]!.body)).toEqual({ client_key: 'k1', name: 'b-1' });
    expect(peer.requests[0]!.headers['content-type']).toBe('application/json');
  });

  it('drains with the consumer header and query; acks without it', async () => {
    const { peer, client } = await hub((req, res) =>
      req.url.startsWith('/v1/inbox/ack')
        ? json(res, 200, { delivered: 0, acknowledged: 1, unknown: [] })
        : json(res, 200, { session: { id: 'sess_1', expires_at: at, lease_seconds: 900 }, messages: [{ x: 1 }] }),
    );
    const d = await client.drain({ session: 'sess_1', limit: 50 });
    expect(d.ok && d.value).toEqual({ session: { id: 'sess_1', expires_at: at, lease_seconds: 900 }, messages: [{ x: 1 }] });
    const p = await client.drain({ wait: 0.5 });
    expect(p.ok).toBe(true);
    const a = await client.ack({ session: 'sess_1', acknowledged: ['ent_1'] });
    expect(a.ok && a.value.acknowledged).toBe(1);
    const [session, principal, ack] = peer.requests;
    expect(session!.url).toBe('/v1/inbox?session=sess_1&limit=50');
    expect(session!.headers['ma2h-consumer']).toBe('home=h1; host=box; pid=5');
    expect(principal!.url).toBe('/v1/inbox?wait=0.5');
    expect(ack!.method).toBe('POST');
    expect(ack!.headers['ma2h-consumer']).toBeUndefined();
  });

  it('puts every endpoint at its MA2H path with ids encoded', async () => {
    const message = {
      id: 'msg_1',
      from: 'agent:agt_1',
      to: 'agent:agt_2',
      intent: 'ask',
      text: 'q',
      created_at: at,
      state: 'queued',
      track: [{ state: 'queued', at }],
    };
    const { peer, client } = await hub((req, res) => {
      if (req.url.startsWith('/v1/sessions')) return json(res, 200, { session });
      if (req.url.startsWith('/v1/messages?')) return json(res, 200, { messages: [message], next: 'c2' });
      if (req.url.startsWith('/v1/messages') || req.url === '/v1/directives') return json(res, 202, { message });
      if (req.url === '/v1/fleet') return json(res, 200, { sessions: [] });
      if (req.url.startsWith('/v1/account/agents?') || (req.url === '/v1/account/agents' && req.method === 'GET')) return json(res, 200, { agents: [] });
      if (req.url === '/v1/account/agents') return json(res, 201, { agent: { id: 'agt_9', label: 'n' }, token: 'new' });
      if (req.url.endsWith('/revoke')) return json(res, 200, { whatever: true });
      if (req.url === '/v1/account') return json(res, 200, { account: { id: 'acct_1', agent_messaging: false } });
      if (req.url === '/v1/operator-stops/lift') return json(res, 200, { lifted: 1 });
      return json(res, 404, { error: { code: 'not_found', message: req.url } });
    });
    const results = await Promise.all([
      client.getSession('sess/1'),
      client.closeSession('sess_1'),
      client.operatorClose('sess_1'),
      client.send({ to: 'agent:agt_2', intent: 'ask', text: 'q' }),
      client.respond('msg 1', { text: 'a' }),
      client.getMessage('msg_1', { wait: 2 }),
      client.listMessages({ direction: 'received', limit: 5, before: 'c1' }),
      client.directive({ to: 'agent:agt_2', text: 'go' }),
      client.fleet(),
      client.listAgents({ includeConfig: true }),
      client.mintAgent({ label: 'n' }),
      client.revokeAgent('agt_9'),
      client.patchAccount({ agent_messaging: false }),
      client.liftStop({ agent_id: 'agt_1', name: 'b-1' }),
    ]);
    for (const r of results) expect(r.ok, JSON.stringify(r)).toBe(true);
    const seen = peer.requests.map((r) => `${r.method} ${r.url}`).sort();
    expect(seen).toEqual(
      [
        'GET /v1/sessions/sess%2F1',
        'POST /v1/sessions/sess_1/close',
        'POST /v1/sessions/sess_1/operator-close',
        'POST /v1/messages',
        'POST /v1/messages/msg%201/respond',
        'GET /v1/messages/msg_1?wait=2',
        'GET /v1/messages?direction=received&limit=5&before=c1',
        'POST /v1/directives',
        'GET /v1/fleet',
        'GET /v1/account/agents?include=config',
        'POST /v1/account/agents',
        'POST /v1/account/agents/agt_9/revoke',
        'PATCH /v1/account',
        'POST /v1/operator-stops/lift',
      ].sort(),
    );
    const patched = results[12]!;
    expect(patched.ok && patched.value).toEqual({ agent_messaging: false });
  });

  it('refuses an agent directory on another origin without sending the credential there', async () => {
    const { peer, client } = await hub((_req, res) => json(res, 200, { agents: [] }));
    const r = await client.listAgents({ path: 'https://elsewhere.example/v1/account/agents' });
    expect(r).toMatchObject({ ok: false, failure: { kind: 'protocol', message: expect.stringContaining("not on the Hub's origin") } });
    const here = await client.listAgents({ path: '/v2/directory' });
    expect(here.ok).toBe(true);
    expect(peer.requests.map((q) => q.url)).toEqual(['/v2/directory']);
  });
});

describe('HubClient failures are values', () => {
  it('an MA2H error body becomes an http failure with code, message, details and Retry-After', async () => {
    const { client } = await hub((_req, res) =>
      json(res, 410, { error: { code: 'session_lapsed', message: 'the lease ran out', state: 'lapsed' } }, { 'retry-after': '3' }),
    );
    expect(await client.getSession('sess_1')).toEqual({
      ok: false,
      failure: { kind: 'http', status: 410, code: 'session_lapsed', message: 'the lease ran out', details: { state: 'lapsed' }, retryAfterSeconds: 3 },
    });
  });

  it('a non-MA2H error page is http_<status>; an HTTP-date Retry-After reads as absent', async () => {
    const { client } = await hub((_req, res) => {
      res.writeHead(502, { 'content-type': 'text/html', 'retry-after': 'Fri, 18 Sep 2026 14:33:07 GMT' });
      res.end('<html>\n<b>Bad   gateway</b></html>');
    });
    expect(await client.fleet()).toEqual({
      ok: false,
      failure: {
        kind: 'http',
        status: 502,
        code: 'http_502',
        message: 'HTTP 502 without an MA2H error body: <html> <b>Bad gateway</b></html>',
        details: {},
        retryAfterSeconds: null,
      },
    });
  });

  it.each([
    [
      'a body that breaks the contract',
      (res: http.ServerResponse) => json(res, 200, { session: { ...session, state: 'paused' } }),
      'field \'state\' is "paused"',
    ],
    ['a body that is not JSON', (res: http.ServerResponse) => json(res, 200, 'ok!'), 'the body is not JSON'],
    ['an empty body', (res: http.ServerResponse) => json(res, 200, ''), 'the body is empty'],
    [
      'bytes that are not UTF-8',
      (res: http.ServerResponse) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(Buffer.from([0x7b, 0xff, 0x7d]));
      },
      'not valid UTF-8',
    ],
  ])('%s is a protocol failure naming the endpoint', async (_name, answer, fragment) => {
    const { client } = await hub((_req, res) => answer(res));
    const r = await client.getSession('sess_1');
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.failure.kind).toBe('protocol');
    expect(r.failure.kind === 'protocol' && r.failure.message).toContain('GET /v1/sessions/sess_1 answered 200');
    expect(r.failure.kind === 'protocol' && r.failure.message).toContain(fragment);
  });

  it('a refused connection is a network failure', async () => {
    const { peer, client } = await hub((_req, res) => json(res, 200, {}));
    await peer.close();
    const r = await client.whoami();
    expect(r).toMatchObject({ ok: false, failure: { kind: 'network', message: expect.stringContaining('GET /v1/whoami') } });
    expect(r.ok || r.failure.message).toMatch(/ECONNREFUSED/);
  });

  it('a connection dropped mid-answer is a network failure', async () => {
    const { client } = await hub((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '100' });
      res.write('{"sess');
      res.socket?.destroy();
    });
    const r = await client.whoami();
    expect(r).toMatchObject({ ok: false, failure: { kind: 'network' } });
  });

  it('an aborted request is a network failure that says so', async () => {
    const ac = new AbortController();
    const { client } = await hub(() => ac.abort());
    const r = await client.whoami(ac.signal);
    expect(r).toEqual({ ok: false, failure: { kind: 'network', message: 'GET /v1/whoami: the request was aborted' } });
  });
});

describe('HubClient construction', () => {
  it('refuses a URL with credentials or another scheme', () => {
    expect(() => new HubClient({ baseUrl: 'https://user:pw@hub.example' })).toThrow(RangeError);
    expect(() => new HubClient({ baseUrl: 'ftp://hub.example' })).toThrow(RangeError);
  });
  it('refuses a consumer identity whose pid is not a positive integer at construction', () => {
    expect(() => new HubClient({ baseUrl: 'http://127.0.0.1:1', consumer: { home: 'h', host: 'x', pid: 0 } })).toThrow(RangeError);
  });
});
