import { describe, expect, it } from 'vitest';
import { rehearseDelivery, WARM_ROUNDS } from '../../../src/consumer/rehearse.js';
import type { VerifyContext } from '../../../src/consumer/verify.js';

/**
 * The connection rehearses a delivery when its first stream opens (src/consumer/rehearse.ts):
 * the made-up delivery must pass every check a real one meets, on either leg, or the rehearsal
 * would stop short and leave the real first delivery to compile the rest; and it must leave no
 * trace in what the connection remembers (seen jtis, the sender policy).
 */
const context = (leg: VerifyContext['leg'], asked: string[]): VerifyContext => ({
  agentId: 'agt_me',
  leg,
  replayWindowSeconds: 300,
  signatureAlgs: ['hmac-sha256'],
  nowMs: Date.UTC(2026, 8, 18, 14, 18, 7),
  clock: null,
  seen: (jti) => {
    asked.push(`seen ${jti}`);
    return true;
  },
  admit: () => {
    asked.push('admit');
    return { admit: false, reason: 'the policy refuses everyone' };
  },
});

describe('rehearsing a delivery', () => {
  it.each([
    ['a session', { leg: 'session', sessionId: 'sess_now' } as const],
    ['the principal', { leg: 'principal' } as const],
  ])('on %s leg passes every check and reaches a spool record, asking neither seen-jti nor the policy', (_name, leg) => {
    const asked: string[] = [];
    expect(rehearseDelivery(context(leg, asked))).toBe(true);
    expect(asked).toEqual([]);
  });

  it('passes every round of the warm-up too (ids and jtis stay valid past round 9), still asking nothing', () => {
    const asked: string[] = [];
    expect(WARM_ROUNDS).toBeGreaterThan(2);
    expect(rehearseDelivery(context({ leg: 'session', sessionId: 'sess_now' }, asked), WARM_ROUNDS)).toBe(true);
    expect(asked).toEqual([]);
  });

  it('stops short (false) where a check would refuse it: a replay window the instant is outside of', () => {
    expect(rehearseDelivery({ ...context({ leg: 'principal' }, []), replayWindowSeconds: -1 })).toBe(false);
  });
});
