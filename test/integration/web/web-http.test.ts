import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hubCall, startHub, type TestHub } from '../../helpers/hub.js';

/**
 * The web inbox's sessions, CSRF and origin checks at the HTTP level, against a real
 * `oh-hai hub serve`: what a browser is protected from cannot be shown by a browser that
 * plays by the rules, so these requests are forged on purpose.
 */
describe('web inbox over HTTP: sign-in, cookies, CSRF and origin checks', () => {
  let hub: TestHub;

  beforeAll(async () => {
    hub = await startHub();
  });
  afterAll(async () => {
    await hub?.dispose();
  });

  interface Browserish {
    cookie: string | null;
    origin: string;
  }

  const request = async (
    b: Browserish,
    method: 'GET' | 'POST' | 'PUT',
    path: string,
    form?: Record<string, string>,
    headers: Record<string, string> = {},
  ): Promise<{ status: number; location: string | null; setCookie: string | null; body: string }> => {
    const res = await fetch(hub.url + path, {
      method,
      redirect: 'manual',
      headers: {
        ...(b.cookie ? { cookie: b.cookie } : {}),
        ...(form ? { 'content-type': 'application/x-www-form-urlencoded', origin: b.origin } : {}),
        ...headers,
      },
      ...(form ? { body: new URLSearchParams(form).toString() } : {}),
    });
    const setCookie = res.headers.get('set-cookie');
    if (setCookie) b.cookie = setCookie.split(';')[0]!;
    return { status: res.status, location: res.headers.get('location'), setCookie, body: await res.text() };
  };

  const csrfOf = (body: string): string => {
    const m = /name="csrf" value="([^"]+)"/.exec(body);
    if (!m) throw new Error(`no csrf field in: ${body.slice(0, 400)}`);
    return m[1]!;
  };

  const messaging = async (): Promise<boolean> => {
    const res = await fetch(`${hub.url}/v1/account`, { headers: { authorization: `Bearer ${hub.humanToken}` } });
    return ((await res.json()) as { account: { agent_messaging: boolean } }).account.agent_messaging;
  };

  const signIn = async (): Promise<Browserish> => {
    const b: Browserish = { cookie: null, origin: hub.url };
    const page = await request(b, 'GET', '/login');
    const r = await request(b, 'POST', '/login', { csrf: csrfOf(page.body), token: hub.humanToken });
    expect(r.status).toBe(303);
    expect(r.location).toBe('/fleet');
    return b;
  };

  it('sets no cookie before sign-in; sign-in sets an HttpOnly SameSite=Strict cookie with a random id, replaced on the next', async () => {
    const b: Browserish = { cookie: null, origin: hub.url };
    const page = await request(b, 'GET', '/login');
    expect(page.status).toBe(200);
    expect(page.setCookie).toBeNull();
    const r = await request(b, 'POST', '/login', { csrf: csrfOf(page.body), token: hub.humanToken });
    expect(r.status).toBe(303);
    expect(r.setCookie).toMatch(/^oh_hai_web=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Strict$/);
    for (const v of [r.location, r.setCookie, r.body]) expect(v ?? '').not.toContain(hub.humanToken);

    const fleet = await request(b, 'GET', '/fleet');
    expect(fleet.status).toBe(200);
    expect(fleet.body).toContain('<h1>Fleet</h1>');
    expect(fleet.body).not.toContain(hub.humanToken);
    // Signing in again replaces the session: the id held before is worthless.
    const before = b.cookie;
    const again = await request({ cookie: null, origin: hub.url }, 'GET', '/login');
    const second = await request(b, 'POST', '/login', { csrf: csrfOf(again.body), token: hub.humanToken });
    expect(second.status).toBe(303);
    expect(b.cookie).not.toBe(before);
    const planted = await request({ cookie: before, origin: hub.url }, 'GET', '/fleet');
    expect(planted.status).toBe(303);
    expect(planted.location).toBe('/login');
  });

  it('marks the cookie Secure and expects an https origin when a TLS-terminating proxy says so', async () => {
    const b: Browserish = { cookie: null, origin: hub.url };
    const page = await request(b, 'GET', '/login', undefined, { 'x-forwarded-proto': 'https' });
    const plain = await request(b, 'POST', '/login', { csrf: csrfOf(page.body), token: hub.humanToken }, { 'x-forwarded-proto': 'https' });
    expect(plain.status).toBe(403);
    b.origin = hub.url.replace(/^http:/, 'https:');
    const tls = await request(b, 'POST', '/login', { csrf: csrfOf(page.body), token: hub.humanToken }, { 'x-forwarded-proto': 'https' });
    expect(tls.status).toBe(303);
    expect(tls.setCookie).toMatch(/; Secure$/);
  });

  it('refuses an agent token and an unknown token at sign-in', async () => {
    const agent = await hub.mintAgent('web-http');
    const b: Browserish = { cookie: null, origin: hub.url };
    const page = await request(b, 'GET', '/login');
    const asAgent = await request(b, 'POST', '/login', { csrf: csrfOf(page.body), token: agent.token });
    expect(asAgent.status).toBe(403);
    expect(asAgent.body).toContain('That is an agent token');
    const unknown = await request(b, 'POST', '/login', { csrf: csrfOf(page.body), token: 'ohh_h_nope' });
    expect(unknown.status).toBe(401);
    expect(unknown.body).not.toContain('ohh_h_nope');
    expect((await request(b, 'GET', '/fleet')).location).toBe('/login');
  });

  it('acts on a POST only with the session’s form token and from the same origin', async () => {
    const b = await signIn();
    const csrf = csrfOf((await request(b, 'GET', '/settings')).body);
    expect(await messaging()).toBe(true);

    const noToken = await request(b, 'POST', '/settings', { agent_messaging: 'off' });
    expect(noToken.status).toBe(403);
    const wrongToken = await request(b, 'POST', '/settings', { agent_messaging: 'off', csrf: csrf.slice(1) + 'x' });
    expect(wrongToken.status).toBe(403);
    const foreign = await request({ ...b, origin: 'http://evil.example' }, 'POST', '/settings', { agent_messaging: 'off', csrf });
    expect(foreign.status).toBe(403);
    const noOrigin = await fetch(`${hub.url}/settings`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie: b.cookie!, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ agent_messaging: 'off', csrf }).toString(),
    });
    expect(noOrigin.status).toBe(403);
    // Another signed-in browser's token is not this session's token.
    const other = await signIn();
    const otherCsrf = csrfOf((await request(other, 'GET', '/settings')).body);
    expect((await request(b, 'POST', '/settings', { agent_messaging: 'off', csrf: otherCsrf })).status).toBe(403);
    expect(await messaging()).toBe(true);

    const good = await request(b, 'POST', '/settings', { agent_messaging: 'off', csrf });
    expect(good.status).toBe(303);
    expect(good.location).toBe('/settings');
    expect(await messaging()).toBe(false);
    expect((await request(b, 'POST', '/settings', { agent_messaging: 'on', csrf })).status).toBe(303);
    expect(await messaging()).toBe(true);
  });

  it('sends nothing for a signed-out POST, and refuses oversized or non-form bodies', async () => {
    const anon: Browserish = { cookie: null, origin: hub.url };
    const r = await request(anon, 'POST', '/send', { to: 'agent:agt_x', text: 'hi', csrf: 'x' });
    expect(r.status).toBe(303);
    expect(r.location).toBe('/login');

    const b = await signIn();
    const csrf = csrfOf((await request(b, 'GET', '/send')).body);
    const big = await request(b, 'POST', '/send', { to: 'agent:agt_x', text: 'x'.repeat(300 * 1024), csrf });
    expect(big.status).toBe(413);
    const json = await fetch(`${hub.url}/send`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie: b.cookie!, origin: hub.url, 'content-type': 'application/json' },
      body: JSON.stringify({ to: 'agent:agt_x', text: 'hi', csrf }),
    });
    expect(json.status).toBe(415);
    const list = await fetch(`${hub.url}/v1/messages?direction=sent`, { headers: { authorization: `Bearer ${hub.humanToken}` } });
    expect(((await list.json()) as { messages: unknown[] }).messages).toEqual([]);
  });

  it('shows the API’s own refusal when a directive cannot be sent, keeping what was typed', async () => {
    const b = await signIn();
    const csrf = csrfOf((await request(b, 'GET', '/send')).body);
    const r = await request(b, 'POST', '/send', { to: 'agent:agt_nobody', text: 'Tidy <up>', csrf });
    expect(r.status).toBe(404);
    expect(r.body).toContain('recipient_not_found');
    expect(r.body).toContain('>Tidy &lt;up&gt;</textarea>');
    expect(r.body).toContain('value="agent:agt_nobody"');
  });

  it('takes an agent label in To, resolved through the directory; an unknown one is refused naming the agents', async () => {
    const agent = await hub.mintAgent('web-target');
    const b = await signIn();
    const csrf = csrfOf((await request(b, 'GET', '/send')).body);
    const ok = await request(b, 'POST', '/send', { to: 'web-target', text: 'by label', csrf });
    expect(ok.status).toBe(303);
    const list = await fetch(`${hub.url}/v1/messages?direction=sent`, { headers: { authorization: `Bearer ${hub.humanToken}` } });
    const sent = ((await list.json()) as { messages: { to: string; text: string }[] }).messages.find((m) => m.text === 'by label');
    expect(sent?.to).toBe(`agent:${agent.id}`);
    const unknown = await request(b, 'POST', '/send', { to: 'no-such-label', text: 'x', csrf });
    expect(unknown.status).toBe(400);
    expect(unknown.body).toContain('is no agent&#39;s label or id');
    expect(unknown.body).toContain(`web-target (agent:${agent.id})`);
  });

  it('the Lift button says what it lifted, that nothing was left to lift, or what the Hub refused', async () => {
    const agent = await hub.mintAgent('web-lifted');
    const s = (await hubCall(hub, 'POST', '/v1/sessions', { token: agent.token, body: { client_key: 'ck-web-lift', name: 'web-lift' } })).body.session;
    expect((await hubCall(hub, 'POST', `/v1/sessions/${s.id}/operator-close`, { token: hub.humanToken })).status).toBe(200);
    const b = await signIn();
    const fleet = (await request(b, 'GET', '/fleet')).body;
    const liftForm = /<form method="post" action="\/fleet\/lift">([\s\S]*?)<\/form>/.exec(fleet.slice(fleet.indexOf('Recorded operator stops')))![1]!;
    const fields = Object.fromEntries([...liftForm.matchAll(/name="([^"]+)" value="([^"]*)"/g)].map((m) => [m[1]!, m[2]!]));
    expect(fields).toMatchObject({ agent_id: agent.id, client_key: 'ck-web-lift', name: 'web-lift', session: s.id });
    const flashAfter = async (form: Record<string, string>): Promise<string> => {
      expect((await request(b, 'POST', '/fleet/lift', form)).status).toBe(303);
      const page = (await request(b, 'GET', '/fleet')).body;
      return (/<div class="flash[^"]*" role="(?:status|alert)">([\s\S]*?)<\/div>/.exec(page)?.[1] ?? '(no flash)')
        .replace(/<[^>]+>/g, ' ')
        .replace(/&#39;/g, "'")
        .replace(/\s+/g, ' ')
        .trim();
    };
    const stop = `on agent ${agent.id} (session name web-lift, recorded when ${s.id} was closed)`;

    const lifted = await flashAfter(fields);
    expect(lifted).toContain(
      `Done Lifted 1 operator stop ${stop}: that run may register again. ${s.id} stays closed; the agent's next oh-hai bridge registers a new session`,
    );
    expect(lifted).toContain('told not to re-run (exit 14), so tell the agent it may');
    expect((await hubCall(hub, 'POST', '/v1/sessions', { token: agent.token, body: { client_key: 'ck-web-lift' } })).status).toBe(201);
    // The same form again (a second tab, a reload of the old page): nothing matched, and it says so.
    expect(await flashAfter(fields)).toContain(`Done Nothing was lifted: no operator stop ${stop} is recorded any more — it was lifted already`);
    const refused = await flashAfter({ csrf: fields.csrf!, agent_id: 'agt_nobody' });
    expect(refused).toContain(
      'Refused The operator stop on agent agt_nobody was not lifted; the Hub answered agent_not_found: no agent agt_nobody in this account',
    );
  });

  it("puts the product doc's advice on writing directives beside the Send form", async () => {
    const b = await signIn();
    const page = (await request(b, 'GET', '/send')).body;
    for (const advice of ['Short, one action.', 'Say what "done" looks like.', 'Address the run you mean.', 'Expect queued, not read.']) {
      expect(page).toContain(`<strong>${advice}</strong>`);
    }
  });

  it('signs out: the server forgets the session and clears the cookie', async () => {
    const b = await signIn();
    const kept = b.cookie;
    const csrf = csrfOf((await request(b, 'GET', '/fleet')).body);
    const out = await request(b, 'POST', '/logout', { csrf });
    expect(out.status).toBe(303);
    expect(out.location).toBe('/login');
    expect(out.setCookie).toContain('Max-Age=0');
    const reused = await request({ cookie: kept, origin: hub.url }, 'GET', '/fleet');
    expect(reused.status).toBe(303);
    expect(reused.location).toBe('/login');
  });

  it('leaves the API alone: unknown paths keep the JSON 404, wrong methods on pages get 405', async () => {
    const miss = await fetch(`${hub.url}/nope`);
    expect(miss.status).toBe(404);
    expect(await miss.json()).toMatchObject({ error: { code: 'not_found' } });
    const who = await fetch(`${hub.url}/v1/whoami`, { headers: { authorization: `Bearer ${hub.humanToken}` } });
    expect(await who.json()).toMatchObject({ kind: 'human' });
    const put = await request({ cookie: null, origin: hub.url }, 'PUT', '/fleet');
    expect(put.status).toBe(405);
    const css = await fetch(`${hub.url}/web.css`);
    expect(css.headers.get('content-type')).toBe('text/css; charset=utf-8');
    const page = await fetch(`${hub.url}/login`);
    expect(page.headers.get('content-security-policy')).toContain("default-src 'none'");
  });
});
