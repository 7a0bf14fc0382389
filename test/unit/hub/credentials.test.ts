import { describe, expect, it } from 'vitest';
import { CredentialCache } from '../../../src/hub/server/credentials.js';
import { fakeClock } from '../../../src/util/clock.js';

// Issue 14 (a send's round trips): a token let in is remembered for a bounded time; a change to
// any credential forgets everything, including what a read under way when it happened would add.

describe('CredentialCache', () => {
  it('answers a remembered token until its bound, then asks again', () => {
    const clock = fakeClock();
    const cache = new CredentialCache<string>(clock, 1000);
    expect(cache.get('h')).toBeUndefined();
    cache.remember('h', 'agent', cache.begin());
    clock.advance(999);
    expect(cache.get('h')).toBe('agent');
    clock.advance(1);
    expect(cache.get('h')).toBeUndefined();
  });

  it('forgets everything at once, and does not remember a read that started before the forget', () => {
    const clock = fakeClock();
    const cache = new CredentialCache<string>(clock, 60_000);
    cache.remember('a', 'one', cache.begin());
    const since = cache.begin();
    cache.forgetAll();
    expect(cache.get('a')).toBeUndefined();
    cache.remember('b', 'read before the revocation', since);
    expect(cache.get('b')).toBeUndefined();
    cache.remember('b', 'read after it', cache.begin());
    expect(cache.get('b')).toBe('read after it');
  });

  it('remembers nothing with a bound of 0, and at most `max` tokens (the oldest go)', () => {
    const clock = fakeClock();
    const off = new CredentialCache<string>(clock, 0);
    off.remember('a', 'one', off.begin());
    expect(off.get('a')).toBeUndefined();
    const small = new CredentialCache<string>(clock, 60_000, 2);
    for (const k of ['a', 'b', 'c']) small.remember(k, k, small.begin());
    expect([small.get('a'), small.get('b'), small.get('c')]).toEqual([undefined, 'b', 'c']);
  });
});
