import { describe, expect, it } from 'vitest';
import { signEntry, type Entry } from '../../../src/hub/contract/index.js';
import { staleTimestampMessage, verifyBatch, verifyDelivery, type VerifyContext } from '../../../src/consumer/verify.js';

const KEY = 'test-key';
const ME = 'agt_me';
const SESS = 'sess_current';
const NOW = Date.UTC(2026, 8, 18, 14, 18, 7);
const nowS = Math.floor(NOW / 1000);

let jtiCounter = 0;
const freshJti = () => `jti_${String(++jtiCounter).padStart(16, '0')}`;

const directive = (over: Record<string, unknown> = {}): Record<string, unknown> => ({
  id: 'ent_1',
  kind: 'directive',
  from: 'human:acct_1',
  to: `agent:${ME}#${SESS}`,
  created_at: '2026-09-18T14:18:00.000Z',
  text: 'run the tests',
  ...over,
});

const ask = (over: Record<string, unknown> = {}): Record<string, unknown> => ({
  id: 'ent_2',
  kind: 'message',
  from: 'agent:agt_peer#sess_p',
  to: `agent:${ME}#${SESS}`,
  created_at: '2026-09-18T14:18:00.000Z',
  message_id: 'msg_1',
  intent: 'ask',
  text: 'review?',
  ...over,
});

const deliver = (entry: Record<string, unknown>, t = nowS, jti = freshJti()) => ({ entry, signature: signEntry(KEY, entry, t, jti) });

const ctx = (over: Partial<VerifyContext> = {}): VerifyContext => ({
  agentId: ME,
  leg: { leg: 'session', sessionId: SESS },
  replayWindowSeconds: 120,
  signatureAlgs: ['hmac-sha256'],
  nowMs: NOW,
  clock: { offsetMs: 0, source: "the Hub's Date header" },
  seen: () => false,
  admit: (e: Entry) => (e.kind === 'message' && e.intent === 'ask' ? { admit: false, reason: 'no policy' } : { admit: true }),
  ...over,
});

describe('verifyDelivery', () => {
  it('accepts a well-formed, fresh, unseen delivery addressed to this session', () => {
    const d = deliver(directive());
    const v = verifyDelivery(d, ctx());
    expect(v).toMatchObject({ verdict: 'accept', signature: d.signature, entry: { id: 'ent_1' } });
  });

  it('accepts a principal-addressed entry on the session leg (first-claim-wins)', () => {
    expect(verifyDelivery(deliver(directive({ to: `agent:${ME}` })), ctx()).verdict).toBe('accept');
  });

  it('accepts U+2028 / U+2029 and CR in a text: data, not framing', () => {
    expect(verifyDelivery(deliver(directive({ text: 'a\u2028b\u2029c\r\nd' })), ctx()).verdict).toBe('accept');
  });

  const rejections: [string, unknown, Partial<VerifyContext>, string, RegExp][] = [
    [
      'a signature out of order',
      { entry: directive(), signature: 'jti=xxxxxxxxxxxxxxxxxx,t=1,alg=hmac-sha256,v1=' + 'a'.repeat(64) },
      {},
      'signature_syntax',
      /expected t=/,
    ],
    ['a delivery without a signature', { entry: directive() }, {}, 'delivery', /signature/],
    ['a t far in the past', deliver(directive(), nowS - 4000), {}, 'replay_window', /4000\.0 s older than our clock.*120 s replay window.*clocks agree/],
    ['a t in the future', deliver(directive(), nowS + 500), {}, 'replay_window', /ahead of our clock/],
    [
      'a jti already seen',
      deliver(directive(), nowS, 'jti_seen_seen_seen_1'),
      { seen: (j) => j === 'jti_seen_seen_seen_1' },
      'jti_replayed',
      /jti_seen_seen_seen_1/,
    ],
    ['a cross-type field', deliver(directive({ intent: 'ask' })), {}, 'entry_shape', /intent/],
    ['an unknown field', deliver(directive({ x_extra: 1 })), {}, 'entry_shape', /x_extra/],
    ['another agent', deliver(directive({ to: 'agent:agt_other#' + SESS })), {}, 'addressing', /agent:agt_other.*another agent/],
    ['another (prior) session', deliver(directive({ to: `agent:${ME}#sess_prior` })), {}, 'addressing', /sess_prior.*prior session/],
  ];
  for (const [what, raw, over, check, message] of rejections) {
    it(`rejects ${what} (${check}), naming the entry id`, () => {
      const v = verifyDelivery(raw, ctx(over));
      expect(v.verdict).toBe('reject');
      if (v.verdict !== 'reject') return;
      expect(v.check).toBe(check);
      expect(v.entryId).toBe('ent_1');
      expect(v.message).toMatch(/^entry ent_1 failed verification/);
      expect(v.message).toMatch(message);
    });
  }

  describe('the replay window edges (120 s, to the millisecond, either direction)', () => {
    const verdict = (t: number, nowMs = NOW) => verifyDelivery(deliver(directive(), t), ctx({ nowMs })).verdict;
    it('accepts t exactly the window away, in the past and in the future', () => {
      expect(verdict(nowS - 120)).toBe('accept');
      expect(verdict(nowS + 120)).toBe('accept');
    });
    it('rejects t a second past the window, in the past and in the future', () => {
      expect(verdict(nowS - 121)).toBe('reject');
      expect(verdict(nowS + 121)).toBe('reject');
    });
    it('rejects t 999 ms and 1 ms past the window (our clock has milliseconds; t has seconds)', () => {
      expect(verdict(nowS - 120, NOW + 999)).toBe('reject');
      expect(verdict(nowS + 120, NOW - 999)).toBe('reject');
      expect(verdict(nowS - 120, NOW + 1)).toBe('reject');
      expect(verdict(nowS + 120, NOW - 1)).toBe('reject');
      expect(verdict(nowS - 120, NOW - 999)).toBe('accept');
    });
  });

  it('checks in the documented order: a bad signature is reported before a bad shape', () => {
    const v = verifyDelivery({ entry: directive({ x_extra: 1 }), signature: 'nope' }, ctx());
    expect(v).toMatchObject({ verdict: 'reject', check: 'signature_syntax' });
  });

  it('refuses (does not reject) an ask the policy does not admit', () => {
    const v = verifyDelivery(deliver(ask()), ctx());
    expect(v).toMatchObject({ verdict: 'refuse', reason: 'no policy', entry: { id: 'ent_2' } });
  });

  it('on the principal leg takes only entries addressed to agent:<me> exactly', () => {
    const principal = ctx({ leg: { leg: 'principal' } });
    expect(verifyDelivery(deliver(directive({ to: `agent:${ME}` })), principal).verdict).toBe('accept');
    expect(verifyDelivery(deliver(directive()), principal)).toMatchObject({ verdict: 'reject', check: 'addressing' });
  });
});

describe('what a rejection says', () => {
  it('names the entry id when the delivery is not even an object, and says so when there is none', () => {
    expect(verifyDelivery('junk', ctx())).toMatchObject({ verdict: 'reject', check: 'delivery', entryId: '(no entry id)' });
    expect(verifyDelivery({ entry: 'junk', signature: 'x' }, ctx())).toMatchObject({ entryId: '(no entry id)' });
    expect(verifyDelivery({ entry: { id: 7 }, signature: 'x' }, ctx())).toMatchObject({ entryId: '(no entry id)' });
    expect(verifyDelivery({ entry: { id: 'ent_x' }, signature: 'x' }, ctx())).toMatchObject({
      entryId: 'ent_x',
      message: /^entry ent_x failed verification \(signature_syntax\)/,
    });
  });

  it('quotes at most 200 characters of a bad signature', () => {
    const signature = 'v'.repeat(300);
    const v = verifyDelivery({ entry: directive(), signature }, ctx());
    expect(v.verdict === 'reject' && v.message).toContain(`(signature "${'v'.repeat(200)}")`);
    expect(v.verdict === 'reject' && v.message).not.toContain('v'.repeat(201));
  });

  it('a stale t: how far, which way, both instants and the window', () => {
    const past = verifyDelivery(deliver(directive(), nowS - 4000), ctx({ clock: null }));
    expect(past.verdict === 'reject' && past.message).toContain(
      `t=${nowS - 4000} (${new Date((nowS - 4000) * 1000).toISOString()}) is 4000.0 s older than our clock (${new Date(NOW).toISOString()}), outside the 120 s replay window.`,
    );
    const ahead = verifyDelivery(deliver(directive(), nowS + 500), ctx({ clock: null }));
    expect(ahead.verdict === 'reject' && ahead.message).toContain('is 500.0 s ahead of our clock');
  });

  it('on the principal leg, a session-addressed entry is refused naming both addresses', () => {
    const v = verifyDelivery(deliver(directive()), ctx({ leg: { leg: 'principal' } }));
    expect(v.verdict === 'reject' && v.message).toContain(
      `addressed to the session agent:${ME}#${SESS}, but the principal drain takes only entries addressed to agent:${ME}`,
    );
  });
});

describe('staleTimestampMessage', () => {
  it('tells a wrong local clock apart from a stale t using the measured offset', () => {
    // Our clock runs an hour fast: the Hub's reads −3600 s relative to ours, and t is fresh by it.
    const msg = staleTimestampMessage(nowS - 3600, { nowMs: NOW, replayWindowSeconds: 120, clock: { offsetMs: -3_600_000, source: 'server_time' } });
    expect(msg).toMatch(/reads −3600\.0 s relative to ours \(measured from server_time\)/);
    expect(msg).toMatch(/the two clocks disagree.*check this machine's time/);
  });

  it('signs the offset: a Hub clock ahead of ours reads +', () => {
    expect(staleTimestampMessage(nowS - 4000, { nowMs: NOW, replayWindowSeconds: 120, clock: { offsetMs: 2500, source: 'server_time' } })).toMatch(
      /reads \+2\.5 s relative to ours.*clocks agree/,
    );
    expect(staleTimestampMessage(nowS - 4000, { nowMs: NOW, replayWindowSeconds: 120, clock: { offsetMs: 0, source: 'server_time' } })).toMatch(
      /reads \+0\.0 s relative/,
    );
  });

  it('by the Hub clock exactly at the window edge, t counts as fresh there (the clocks disagree)', () => {
    // t is 4000 s old by our clock; the Hub's clock is 3880 s behind ours, so by the Hub's t is exactly 120 s old
    const msg = staleTimestampMessage(nowS - 4000, { nowMs: NOW, replayWindowSeconds: 120, clock: { offsetMs: -3_880_000, source: 'server_time' } });
    expect(msg).toMatch(/t is only 120\.0 s off, so the two clocks disagree/);
    const beyond = staleTimestampMessage(nowS - 4000, { nowMs: NOW, replayWindowSeconds: 120, clock: { offsetMs: -3_879_999, source: 'server_time' } });
    expect(beyond).toMatch(/clocks agree and t itself is out of the window/);
  });

  it('says a wrong clock cannot be ruled out when the Hub clock was never read', () => {
    expect(staleTimestampMessage(nowS - 3600, { nowMs: NOW, replayWindowSeconds: 120, clock: null })).toMatch(/cannot be ruled out/);
  });
});

describe('verifyBatch', () => {
  it('verifies the whole batch first: one bad delivery rejects all of it', () => {
    const v = verifyBatch([deliver(directive({ id: 'ent_a' })), deliver(directive({ id: 'ent_b', x_extra: 1 }))], ctx());
    expect(v).toMatchObject({ ok: false, rejection: { entryId: 'ent_b', check: 'entry_shape' } });
  });

  it('a jti repeated inside one batch is a replay', () => {
    const v = verifyBatch(
      [deliver(directive({ id: 'ent_a' }), nowS, 'jti_dup_dup_dup_dup'), deliver(directive({ id: 'ent_b' }), nowS, 'jti_dup_dup_dup_dup')],
      ctx(),
    );
    expect(v).toMatchObject({ ok: false, rejection: { entryId: 'ent_b', check: 'jti_replayed' } });
  });

  it('separates accepted from refused, keeping order', () => {
    const v = verifyBatch([deliver(directive({ id: 'ent_a' })), deliver(ask({ id: 'ent_q' })), deliver(directive({ id: 'ent_c' }))], ctx());
    expect(v.ok).toBe(true);
    if (!v.ok) return;
    expect(v.accepted.map((a) => a.entry.id)).toEqual(['ent_a', 'ent_c']);
    expect(v.refused.map((a) => a.entry.id)).toEqual(['ent_q']);
  });
});
