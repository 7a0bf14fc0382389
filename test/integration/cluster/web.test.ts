import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPair, type Pair } from '../../helpers/cluster.js';
import type { TestHub } from '../../helpers/hub.js';
import { findNginx, type Balancer } from '../../helpers/nginx.js';
import { sql } from '../../helpers/postgres.js';

// Issue 14: a web inbox sign-in is kept in the shared database, so it holds on every instance
// behind the shipped nginx config: a browser signed in through one instance is served by the
// other, a flash set on one is shown once on the other, and a sign-out on one ends it on both.

const noNginx = findNginx() === null ? 'nginx is not installed (Debian: apt-get install nginx; .ci/postgres.sh installs it)' : null;
if (noNginx !== null) console.log(`skipping the web cluster test: ${noNginx}`);

interface Browser {
  cookie: string | null;
}

describe.skipIf(noNginx !== null)('web inbox sign-in across two Hub instances behind nginx', () => {
  let pair: Pair, db: Pair['db'], a: TestHub, b: TestHub, lb: Balancer;
  beforeAll(async () => void ({ db, a, b, lb } = pair = await startPair()));
  afterAll(() => pair?.dispose());

  /** One request as a browser makes it to `base` (a form POST carries that page's Origin). */
  const request = async (base: string, br: Browser, method: 'GET' | 'POST', p: string, form?: Record<string, string>) => {
    const res = await fetch(base + p, {
      method,
      redirect: 'manual',
      headers: {
        ...(br.cookie ? { cookie: br.cookie } : {}),
        ...(form ? { 'content-type': 'application/x-www-form-urlencoded', origin: base } : {}),
      },
      ...(form ? { body: new URLSearchParams(form).toString() } : {}),
    });
    const setCookie = res.headers.get('set-cookie');
    if (setCookie) br.cookie = setCookie.split(';')[0]!;
    return { status: res.status, location: res.headers.get('location'), body: await res.text() };
  };
  const csrfOf = (body: string): string => {
    const m = /name="csrf" value="([^"]+)"/.exec(body);
    if (!m) throw new Error(`no csrf field in: ${body.slice(0, 400)}`);
    return m[1]!;
  };

  it('a sign-in through the balancer is honoured by both instances; a flash shows once wherever it lands; a sign-out ends it everywhere', async () => {
    const br: Browser = { cookie: null };
    const login = await request(lb.url, br, 'GET', '/login');
    const signedIn = await request(lb.url, br, 'POST', '/login', { csrf: csrfOf(login.body), token: a.humanToken });
    expect(signedIn.status, signedIn.body).toBe(303);
    expect(signedIn.location).toBe('/fleet');
    // The session is a row in the shared database, holding no secret in the clear.
    const rows = await sql<{ sealed: string }>(db.url, 'SELECT sealed FROM web_sessions');
    expect(rows).toHaveLength(1);
    expect(JSON.stringify(rows)).not.toContain(a.humanToken);
    expect(JSON.stringify(rows)).not.toContain(br.cookie!.split('=')[1]);

    // Each instance, asked directly, knows the browser; through the balancer, page after page, too.
    for (const base of [a.url, b.url, lb.url, lb.url, lb.url, lb.url]) {
      const fleet = await request(base, br, 'GET', '/fleet');
      expect(fleet.status, `${base}: ${fleet.body.slice(0, 300)}`).toBe(200);
      expect(fleet.body).toContain('<h1>Fleet</h1>');
    }

    // An action on A leaves its flash (a minted token, shown once) for the next page, served by B.
    const agents = await request(a.url, br, 'GET', '/agents');
    const minted = await request(a.url, br, 'POST', '/agents', { csrf: csrfOf(agents.body), label: 'across' });
    expect(minted.status, minted.body).toBe(303);
    const onB = await request(b.url, br, 'GET', '/agents');
    expect(onB.status).toBe(200);
    expect(onB.body).toContain('Copy its token now');
    const again = await request(a.url, br, 'GET', '/agents');
    expect(again.body).not.toContain('Copy its token now');

    // Signing out through B ends the session on A as well (the old cookie is worth nothing there).
    const held = br.cookie;
    const out = await request(b.url, br, 'POST', '/logout', { csrf: csrfOf(onB.body) });
    expect(out.status).toBe(303);
    const gone = await request(a.url, { cookie: held }, 'GET', '/fleet');
    expect(gone.status).toBe(303);
    expect(gone.location).toBe('/login');
    expect(await sql(db.url, 'SELECT id_hash FROM web_sessions')).toHaveLength(0);
  });
});
