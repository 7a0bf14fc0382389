import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { fakeClock } from '../../../src/util/clock.js';
import { checkSameOrigin } from '../../../src/hub/server/web/http.js';
import { readSessionCookie, sameSecret, SessionStore, sessionCookie, clearedSessionCookie } from '../../../src/hub/server/web/sessions.js';

const signedIn = { token: 'human-token', accountId: 'acct_1', accountLabel: null };

describe('SessionStore', () => {
  it('mints random ids and CSRF tokens, distinct per session', () => {
    const store = new SessionStore(fakeClock(0), 60_000, 10);
    const a = store.create();
    const b = store.create();
    expect(a.id).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(a.csrf).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(new Set([a.id, b.id, a.csrf, b.csrf]).size).toBe(4);
  });

  it('replaces the session on sign-in, so an id planted before sign-in is worthless', () => {
    const store = new SessionStore(fakeClock(0), 60_000, 10);
    const anon = store.create();
    const s = store.signIn(anon, signedIn);
    expect(s.id).not.toBe(anon.id);
    expect(s.csrf).not.toBe(anon.csrf);
    expect(store.get(anon.id)).toBeNull();
    expect(store.get(s.id)?.signedIn?.token).toBe('human-token');
  });

  it('forgets a session idle for longer than the idle bound, and keeps one in use', () => {
    const clock = fakeClock(0);
    const store = new SessionStore(clock, 60_000, 10);
    const used = store.create();
    const idle = store.create();
    clock.advance(50_000);
    expect(store.get(used.id)).not.toBeNull();
    clock.advance(50_000);
    expect(store.get(idle.id)).toBeNull();
    expect(store.get(used.id)).not.toBeNull();
  });

  it('is bounded: past the limit the least recently used session goes first', () => {
    const store = new SessionStore(fakeClock(0), 60_000, 2);
    const a = store.create();
    const b = store.create();
    store.get(a.id);
    const c = store.create();
    expect(store.get(b.id)).toBeNull();
    expect(store.get(a.id)).not.toBeNull();
    expect(store.get(c.id)).not.toBeNull();
  });

  it('destroys a session on sign-out', () => {
    const store = new SessionStore(fakeClock(0), 60_000, 10);
    const s = store.create();
    store.destroy(s.id);
    expect(store.get(s.id)).toBeNull();
    expect(store.get(undefined)).toBeNull();
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
