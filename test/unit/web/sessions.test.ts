import { mkdtempSync, rmSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Store } from '../../../src/hub/server/sql.js';
import { openStore, sqliteStore } from '../../../src/hub/server/store.js';
import { fakeClock } from '../../../src/util/clock.js';

type FakeClock = ReturnType<typeof fakeClock>;
import { checkSameOrigin } from '../../../src/hub/server/web/http.js';
import { readSessionCookie, sameSecret, SessionStore, sessionCookie, clearedSessionCookie } from '../../../src/hub/server/web/sessions.js';
import { LoginForms, SignInThrottle } from '../../../src/hub/server/web/sign-in.js';

const signedIn = { token: 'human-token', accountId: 'acct_1', accountLabel: null };

// Sessions live in the Hub's store: these run on a real SQLite store in a temp dir, on a fake clock.
const dirs: string[] = [];
const opened: Store[] = [];
afterAll(async () => {
  for (const s of opened) await s.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function sessionStore(opts: { clock?: FakeClock; maxSessions?: number; signingKey?: string; store?: Store } = {}) {
  const clock = opts.clock ?? fakeClock(0);
  let store = opts.store;
  if (store === undefined) {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'oh-hai-web-sessions-'));
    dirs.push(dir);
    store = sqliteStore(openStore(dir), {
      clock,
      wake: () => undefined,
      committed: () => undefined,
      effectFailed: (e) => {
        throw e;
      },
    });
    opened.push(store);
  }
  const held = store;
  return {
    store: held,
    sessions: new SessionStore({ store: () => held, clock, signingKey: opts.signingKey ?? 'key-1', idleMs: 60_000, maxSessions: opts.maxSessions ?? 10 }),
  };
}

describe('SessionStore', () => {
  it('mints random ids and CSRF tokens, distinct per session', async () => {
    const { sessions } = sessionStore();
    const a = await sessions.signIn(null, signedIn);
    const b = await sessions.signIn(null, signedIn);
    expect(a.id).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(a.csrf).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(new Set([a.id, b.id, a.csrf, b.csrf]).size).toBe(4);
  });

  it('replaces the session on sign-in, so an id the browser held before is worthless', async () => {
    const { sessions } = sessionStore();
    const anon = await sessions.signIn(null, signedIn);
    const s = await sessions.signIn(anon, signedIn);
    expect(s.id).not.toBe(anon.id);
    expect(s.csrf).not.toBe(anon.csrf);
    expect(await sessions.get(anon.id)).toBeNull();
    expect((await sessions.get(s.id))?.signedIn?.token).toBe('human-token');
  });

  it('forgets a session idle for longer than the idle bound, and keeps one in use', async () => {
    const clock = fakeClock(0);
    const { sessions } = sessionStore({ clock });
    const used = await sessions.signIn(null, signedIn);
    const idle = await sessions.signIn(null, signedIn);
    clock.advance(50_000);
    expect(await sessions.get(used.id)).not.toBeNull();
    clock.advance(50_000);
    expect(await sessions.get(idle.id)).toBeNull();
    expect(await sessions.get(used.id)).not.toBeNull();
  });

  it('is bounded: past the limit the least recently used session goes first', async () => {
    const clock = fakeClock(0);
    const { sessions } = sessionStore({ clock, maxSessions: 2 });
    const a = await sessions.signIn(null, signedIn);
    clock.advance(10_000);
    const b = await sessions.signIn(null, signedIn);
    clock.advance(10_000);
    await sessions.get(a.id);
    clock.advance(10_000);
    const c = await sessions.signIn(null, signedIn);
    expect(await sessions.get(b.id)).toBeNull();
    expect(await sessions.get(a.id)).not.toBeNull();
    expect(await sessions.get(c.id)).not.toBeNull();
  });

  it('destroys a session on sign-out', async () => {
    const { sessions } = sessionStore();
    const s = await sessions.signIn(null, signedIn);
    await sessions.destroy(s.id);
    expect(await sessions.get(s.id)).toBeNull();
    expect(await sessions.get(undefined)).toBeNull();
  });

  it('keeps a flash for the next view only, and shares it with every reader of the store (another instance)', async () => {
    const { sessions, store } = sessionStore();
    const other = sessionStore({ store }).sessions;
    const s = await sessions.signIn(null, signedIn);
    await sessions.setFlash(s, { kind: 'ok', text: 'minted', secret: 'agent-token' });
    const seen = (await other.get(s.id))!;
    expect(await other.takeFlash(seen)).toEqual({ kind: 'ok', text: 'minted', secret: 'agent-token' });
    expect((await sessions.get(s.id))!.flash).toBeNull();
  });

  it('stores no secret in the clear: the row holds a hash of the cookie id, and the sealed part opens only under the same signing key', async () => {
    const { sessions, store } = sessionStore();
    const s = await sessions.signIn(null, signedIn);
    await sessions.setFlash(s, { kind: 'ok', text: 'minted', secret: 'agent-token' });
    const rows = await store.read.all<Record<string, unknown>>('SELECT * FROM web_sessions');
    const dump = JSON.stringify(rows);
    expect(rows).toHaveLength(1);
    for (const secret of [s.id, s.csrf, 'human-token', 'agent-token', 'acct_1']) expect(dump).not.toContain(secret);
    // Another deployment's key opens nothing, and the unreadable session is dropped.
    const foreign = sessionStore({ store, signingKey: 'key-2' }).sessions;
    expect(await foreign.get(s.id)).toBeNull();
    expect(await store.read.all('SELECT * FROM web_sessions')).toHaveLength(0);
  });
});

describe('LoginForms: the stateless sign-in CSRF token', () => {
  it('accepts a token its deployment issued within the hour (on any instance), and nothing else', () => {
    const clock = fakeClock(1_000_000);
    const forms = new LoginForms(clock, 'deployment-key');
    const t = forms.issue();
    expect(forms.check(t)).toBe(true);
    expect(forms.check(t.slice(0, -1) + (t.endsWith('A') ? 'B' : 'A'))).toBe(false);
    expect(forms.check(`${Number(t.split('.')[0]) + 1}.${t.split('.')[1]}`)).toBe(false);
    expect(forms.check('')).toBe(false);
    expect(forms.check('.')).toBe(false);
    // Another instance of the deployment (same signing key) accepts it; another deployment does not.
    expect(new LoginForms(clock, 'deployment-key').check(t)).toBe(true);
    expect(new LoginForms(clock, 'other-key').check(t)).toBe(false);
    clock.advance(3600_000);
    expect(forms.check(t)).toBe(true);
    clock.advance(1);
    expect(forms.check(t)).toBe(false);
  });
});

describe('SignInThrottle', () => {
  it('doubles the hold per recent refusal from one source, up to 30 s; a success or 15 quiet minutes clear it', () => {
    const clock = fakeClock(0);
    const t = new SignInThrottle(clock, 1000);
    expect([1, 2, 3, 4, 5, 6, 7].map(() => t.refused('a'))).toEqual([1000, 2000, 4000, 8000, 16000, 30000, 30000]);
    expect(t.refused('b')).toBe(1000);
    t.succeeded('a');
    expect(t.refused('a')).toBe(1000);
    clock.advance(15 * 60_000 + 1);
    expect(t.refused('b')).toBe(1000);
  });

  it('runs the attempts of one source one at a time, and refuses past four waiting', async () => {
    const t = new SignInThrottle(fakeClock(0), 1000);
    const order: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const first = t.attempt('a', async () => {
      order.push('a1 start');
      await gate;
      order.push('a1 end');
    });
    const second = t.attempt('a', async () => void order.push('a2'));
    const other = t.attempt('b', async () => void order.push('b1'));
    await other;
    expect(order).toEqual(['a1 start', 'b1']);
    const waiting = [t.attempt('a', async () => undefined), t.attempt('a', async () => undefined)];
    expect(await t.attempt('a', async () => undefined)).toMatchObject({ kind: 'busy' });
    release();
    await Promise.all([first, second, ...waiting]);
    expect(order).toEqual(['a1 start', 'b1', 'a1 end', 'a2']);
  });
});

describe('cookies', () => {
  it('is HttpOnly and SameSite=Strict always, Secure only over https', () => {
    expect(sessionCookie('abc', false)).toBe('oh_hai_web=abc; Path=/; HttpOnly; SameSite=Strict');
    expect(sessionCookie('abc', true)).toBe('oh_hai_web=abc; Path=/; HttpOnly; SameSite=Strict; Secure');
    expect(clearedSessionCookie(false)).toContain('Max-Age=0');
  });

  it('finds our cookie among others', () => {
    expect(readSessionCookie('a=1; oh_hai_web=xyz ; b=2')).toBe('xyz');
    expect(readSessionCookie('a=1')).toBeUndefined();
    expect(readSessionCookie(undefined)).toBeUndefined();
  });

  it('compares secrets of different lengths without throwing', () => {
    expect(sameSecret('abc', 'abc')).toBe(true);
    expect(sameSecret('abc', 'abcd')).toBe(false);
    expect(sameSecret('', 'abc')).toBe(false);
  });
});

describe('checkSameOrigin', () => {
  const req = (headers: Record<string, string>): IncomingMessage => ({ headers }) as unknown as IncomingMessage;
  it.each([
    [{ host: '127.0.0.1:5000', origin: 'http://127.0.0.1:5000' }, false, true],
    [{ host: '127.0.0.1:5000', origin: 'http://evil.example' }, false, false],
    [{ host: '127.0.0.1:5000', origin: 'http://127.0.0.1:5000' }, true, false],
    [{ host: 'hub.example', origin: 'https://hub.example' }, true, true],
    [{ host: '127.0.0.1:5000', origin: 'null' }, false, false],
    [{ host: '127.0.0.1:5000', referer: 'http://127.0.0.1:5000/send' }, false, true],
    [{ host: '127.0.0.1:5000', referer: 'http://127.0.0.1:5000.evil.example/send' }, false, false],
    [{ host: '127.0.0.1:5000' }, false, false],
    [{ origin: 'http://127.0.0.1:5000' }, false, false],
  ])('%j (https: %s) → %s', (headers, secure, accepted) => {
    expect(checkSameOrigin(req(headers), secure).ok).toBe(accepted);
  });
});
