import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHub, type TestHub } from '../../helpers/hub.js';

// Issue 18: what an attacker did to the web inbox, against a real `oh-hai hub serve`. Finding 6:
// each cookieless GET /login made a session and the store evicted the oldest at 1,000, so 1,000
// unauthenticated requests signed the operator out. Low: no delay on refused sign-ins; invalid
// UTF-8 in a body silently became U+FFFD.

/** Refused sign-ins are held this long (doubling per refusal): long enough that order shows it on a loaded machine. */
const DELAY_S = 5;

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** One request from a chosen loopback source address (127.0.0.0/8 is all loopback on Linux). */
function send(hub: TestHub, o: { method: string; path: string; from?: string; cookie?: string | null; body?: Buffer | string }): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const body = o.body === undefined ? undefined : Buffer.from(o.body);
    const req = http.request(
      {
        host: '127.0.0.1',
        port: hub.port,
        method: o.method,
        path: o.path,
        localAddress: o.from ?? '127.0.0.1',
        agent: false,
        headers: {
          ...(o.cookie ? { cookie: o.cookie } : {}),
          ...(body ? { 'content-type': 'application/x-www-form-urlencoded', 'content-length': body.length, origin: hub.url } : {}),
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8').on('data', (d: string) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const csrfOf = (body: string): string => /name="csrf" value="([^"]+)"/.exec(body)![1]!;
const form = (fields: Record<string, string>): string => new URLSearchParams(fields).toString();

describe('web inbox under attack', () => {
  let hub: TestHub;

  beforeAll(async () => {
    hub = await startHub({ args: ['--web-signin-delay-seconds', String(DELAY_S)] });
  });
  afterAll(async () => {
    await hub?.dispose();
  });

  async function signIn(from = '127.0.0.1'): Promise<string> {
    const page = await send(hub, { method: 'GET', path: '/login', from });
    const r = await send(hub, { method: 'POST', path: '/login', from, body: form({ csrf: csrfOf(page.body), token: hub.humanToken }) });
    expect(r.status, r.body).toBe(303);
    return String(r.headers['set-cookie']).split(';')[0]!;
  }

  it('keeps the operator signed in through 1,100 unauthenticated GET /login (no session is made before a sign-in)', async () => {
    const cookie = await signIn();
    let next = 0;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next < 1100) {
          next += 1;
          const r = await send(hub, { method: 'GET', path: '/login', from: '127.0.0.9' });
          expect(r.status).toBe(200);
          expect(r.headers['set-cookie']).toBeUndefined();
        }
      }),
    );
    const fleet = await send(hub, { method: 'GET', path: '/fleet', cookie });
    expect(fleet.status).toBe(200);
    expect(fleet.body).toContain('<h1>Fleet</h1>');
  });

  it('holds refused sign-ins per source: a guesser waits its turn, another address signs in at once', async () => {
    const page = await send(hub, { method: 'GET', path: '/login', from: '127.0.0.2' });
    const guess = (token: string) => send(hub, { method: 'POST', path: '/login', from: '127.0.0.2', body: form({ csrf: csrfOf(page.body), token }) });
    const order: string[] = [];
    const guesses = [guess('ohh_h_guess_1'), guess('ohh_h_guess_2')].map((p, i) =>
      p.then((r) => {
        order.push(`guess ${i + 1}`);
        return r;
      }),
    );
    // Sent after the guesses, from another address: answered while the guesses are held.
    const operator = signIn('127.0.0.3').then(() => order.push('operator'));
    const answers = await Promise.all(guesses);
    await operator;
    console.log(`answer order: ${order.join(', ')}`);
    expect(answers.map((a) => a.status)).toEqual([401, 401]);
    expect(order[0]).toBe('operator');
  }, 60_000);

  it('refuses with 429 and Retry-After once four sign-ins from one source are waiting', async () => {
    const page = await send(hub, { method: 'GET', path: '/login', from: '127.0.0.4' });
    // One refusal first, so the next ones from this source queue behind its hold.
    void send(hub, { method: 'POST', path: '/login', from: '127.0.0.4', body: form({ csrf: csrfOf(page.body), token: 'ohh_h_first' }) }).catch(() => null);
    const more = Array.from({ length: 6 }, (_, i) =>
      send(hub, { method: 'POST', path: '/login', from: '127.0.0.4', body: form({ csrf: csrfOf(page.body), token: `ohh_h_more_${i}` }) }).catch(() => null),
    );
    // The first 429 to come back (the ones that queued are held for tens of seconds).
    const busy = await Promise.any(more.map((p) => p.then((r) => (r?.status === 429 ? r : Promise.reject(new Error(`answered ${r?.status}`))))));
    expect(Number(busy.headers['retry-after'])).toBeGreaterThan(0);
    expect(busy.body).toContain('Too many sign-ins from your address');
  }, 60_000);

  it('refuses a form that is not valid UTF-8 with 400, never a U+FFFD copy', async () => {
    const cookie = await signIn('127.0.0.5');
    const csrf = csrfOf((await send(hub, { method: 'GET', path: '/send', cookie, from: '127.0.0.5' })).body);
    const body = Buffer.concat([Buffer.from(`csrf=${csrf}&to=agent%3Aagt_x&text=`), Buffer.from([0xff, 0xfe]), Buffer.from('hi')]);
    const r = await send(hub, { method: 'POST', path: '/send', cookie, from: '127.0.0.5', body });
    expect(r.status).toBe(400);
    expect(r.body).toContain('not valid UTF-8');
    const escaped = await send(hub, {
      method: 'POST',
      path: '/send',
      cookie,
      from: '127.0.0.5',
      body: Buffer.from(`csrf=${csrf}&to=agent%3Aagt_x&text=hi%FF`),
    });
    expect(escaped.status).toBe(400);
    expect(escaped.body).toContain('not valid UTF-8');
  });
});
