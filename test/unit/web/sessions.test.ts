import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { fakeClock } from '../../../src/util/clock.js';
import { checkSameOrigin } from '../../../src/hub/server/web/http.js';
import { readSessionCookie, sameSecret, SessionStore, sessionCookie, clearedSessionCookie } from '../../../src/hub/server/web/sessions.js';
import { LoginForms, SignInThrottle } from '../../../src/hub/server/web/sign-in.js';

const signedIn = { token: 'human-token', accountId: 'acct_1', accountLabel: null };

describe('SessionStore', () => {
  it('mints random ids and CSRF tokens, distinct per session', () => {
    const store = new SessionStore(fakeClock(0), 60_000, 10);
    const a = store.signIn(null, signedIn);
    const b = store.signIn(null, signedIn);
    expect(a.id).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(a.csrf).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(new Set([a.id, b.id, a.csrf, b.csrf]).size).toBe(4);
  });

  it('replaces the session on sign-in, so an id the browser held before is worthless', () => {
    const store = new SessionStore(fakeClock(0), 60_000, 10);
    const anon = store.signIn(null, signedIn);
    const s = store.signIn(anon, signedIn);
    expect(s.id).not.toBe(anon.id);
    expect(s.csrf).not.toBe(anon.csrf);
    expect(store.get(anon.id)).toBeNull();
    expect(store.get(s.id)?.signedIn?.token).toBe('human-token');
  });

  it('forgets a session idle for longer than the idle bound, and keeps one in use', () => {
    const clock = fakeClock(0);
    const store = new SessionStore(clock, 60_000, 10);
    const used = store.signIn(null, signedIn);
    const idle = store.signIn(null, signedIn);
    clock.advance(50_000);
    expect(store.get(used.id)).not.toBeNull();
    clock.advance(50_000);
    expect(store.get(idle.id)).toBeNull();
    expect(store.get(used.id)).not.toBeNull();
  });

  it('is bounded: past the limit the least recently used session goes first', () => {
    const store = new SessionStore(fakeClock(0), 60_000, 2);
    const a = store.signIn(null, signedIn);
    const b = store.signIn(null, signedIn);
    store.get(a.id);
    const c = store.signIn(null, signedIn);
    expect(store.get(b.id)).toBeNull();
    expect(store.get(a.id)).not.toBeNull();
    expect(store.get(c.id)).not.toBeNull();
  });

  it('destroys a session on sign-out', () => {
    const store = new SessionStore(fakeClock(0), 60_000, 10);
    const s = store.signIn(null, signedIn);
    store.destroy(s.id);
    expect(store.get(s.id)).toBeNull();
    expect(store.get(undefined)).toBeNull();
  });
});

describe('LoginForms: the stateless sign-in CSRF token', () => {
  it('accepts a token it issued within the hour, and nothing else', () => {
    const clock = fakeClock(1_000_000);
    const forms = new LoginForms(clock);
    const t = forms.issue();
    expect(forms.check(t)).toBe(true);
    expect(forms.check(t.slice(0, -1) + (t.endsWith('A') ? 'B' : 'A'))).toBe(false);
    expect(forms.check(`${Number(t.split('.')[0]) + 1}.${t.split('.')[1]}`)).toBe(false);
    expect(forms.check('')).toBe(false);
    expect(forms.check('.')).toBe(false);
    expect(new LoginForms(clock).check(t)).toBe(false);
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
