import { describe, expect, it } from 'vitest';
import { describePolicy, parsePolicy, policyAdmits, policyEquals, policyItems, type Policy, type PolicyEntry } from '../../../src/config/index.js';

const policy = (items: string[]): Policy => {
  const p = parsePolicy(items);
  if (!p.ok) throw new Error(p.reason);
  return p.value;
};

const self = { agentId: 'agt_me' };
const msg = (intent: string, from: string): PolicyEntry => ({ kind: 'message', intent, from });

describe('parsePolicy', () => {
  it('accepts the three item forms and normalises them', () => {
    const p = policy(['agent:agt_b', 'any-in-account', 'agent:agt_c#sess_1', 'agent:agt_b']);
    expect(p.anyInAccount).toBe(true);
    expect([...p.agents]).toEqual(['agt_b']);
    expect([...p.sessions]).toEqual(['agt_c#sess_1']);
    expect(policyItems(p)).toEqual(['any-in-account', 'agent:agt_b', 'agent:agt_c#sess_1']);
  });

  it('an empty list is a declared policy that admits nobody, not the absence of one', () => {
    const p = policy([]);
    expect(policyItems(p)).toEqual([]);
    expect(policyEquals(p, null)).toBe(false);
  });

  it.each([
    ['bob', /"bob" is not a sender policy item; use any-in-account, agent:<id>, or agent:<id>#<session id>/],
    ['human:acct_1', /names a human; humans send directives, which are always delivered/],
    ['agent:', /is empty, so it could never match/],
    ['agent:a b', /U\+0020.*could never match/],
    ['agent:a\u0001', /U\+0001.*could never match/],
    ['agent:a#', /session id .* is empty/],
    ['agent:a#s#t', /'#'/],
    [`agent:${'x'.repeat(513)}`, /513 bytes; the limit is 512/],
    [`agent:a#${'s'.repeat(129)}`, /129 bytes; the limit is 128/],
    ['Any-In-Account', /is not a sender policy item/],
  ])('refuses %j, naming the item', (item, reason) => {
    const p = parsePolicy(['agent:ok', item]);
    expect(p.ok).toBe(false);
    if (!p.ok) expect(p.reason).toMatch(reason);
  });

  it('accepts a 512-byte agent id and ids carrying one quote kind', () => {
    expect(parsePolicy([`agent:${'x'.repeat(512)}`]).ok).toBe(true);
    expect(parsePolicy([`agent:o'brien`, 'agent:say"hi"']).ok).toBe(true);
  });
});

describe('policyAdmits', () => {
  const kinds: PolicyEntry[] = [
    { kind: 'directive', from: 'human:acct_1' },
    { kind: 'message', intent: 'notify', from: 'agent:agt_x#sess_1' },
    { kind: 'response', from: 'agent:agt_x' },
    { kind: 'receipt', from: 'agent:agt_x#sess_1' },
  ];

  it.each([null, [], ['agent:agt_other']])('always delivers directives, notifies, responses and receipts (policy %j)', (items) => {
    const p = items === null ? null : policy(items);
    for (const e of kinds) expect(policyAdmits(p, e, self)).toEqual({ admit: true });
  });

  it('declaring nothing is fail-closed: every ask and task is refused with the by-hand fix and #1127', () => {
    for (const intent of ['ask', 'task']) {
      const r = policyAdmits(null, msg(intent, 'agent:agt_b#sess_1'), self);
      expect(r.admit).toBe(false);
      if (r.admit) continue;
      expect(r.reason).toContain(`${intent} from agent:agt_b#sess_1 to agent:agt_me refused: no sender policy is declared`);
      expect(r.reason).toContain('fail-closed');
      expect(r.reason).toContain('add "agent:agt_b" to [bridge] allow_from');
      expect(r.reason).toContain('--allow-from agent:agt_b');
      expect(r.reason).toContain('#1127');
    }
  });

  it('any-in-account admits any agent sender, principal or session', () => {
    const p = policy(['any-in-account']);
    expect(policyAdmits(p, msg('ask', 'agent:agt_q'), self).admit).toBe(true);
    expect(policyAdmits(p, msg('task', 'agent:agt_q#sess_9'), self).admit).toBe(true);
  });

  it('agent:<id> admits that agent from any session and nobody else', () => {
    const p = policy(['agent:agt_b']);
    expect(policyAdmits(p, msg('ask', 'agent:agt_b'), self).admit).toBe(true);
    expect(policyAdmits(p, msg('ask', 'agent:agt_b#sess_1'), self).admit).toBe(true);
    expect(policyAdmits(p, msg('task', 'agent:agt_b#sess_2'), self).admit).toBe(true);
    const other = policyAdmits(p, msg('ask', 'agent:agt_bb#sess_1'), self);
    expect(other.admit).toBe(false);
    if (!other.admit) expect(other.reason).toContain('the declared policy (agent:agt_b) does not admit it');
  });

  it('agent:<id>#<session> admits only that session', () => {
    const p = policy(['agent:agt_b#sess_1']);
    expect(policyAdmits(p, msg('ask', 'agent:agt_b#sess_1'), self).admit).toBe(true);
    expect(policyAdmits(p, msg('ask', 'agent:agt_b#sess_2'), self).admit).toBe(false);
    expect(policyAdmits(p, msg('ask', 'agent:agt_b'), self).admit).toBe(false);
  });

  it('an empty list refuses every ask', () => {
    const r = policyAdmits(policy([]), msg('ask', 'agent:agt_b'), self);
    expect(r.admit).toBe(false);
    if (!r.admit) expect(r.reason).toContain('an empty allow_from');
  });

  it('refuses an ask whose sender is not an agent address, even under any-in-account', () => {
    const r = policyAdmits(policy(['any-in-account']), msg('ask', 'human:acct_1'), self);
    expect(r.admit).toBe(false);
    if (!r.admit) expect(r.reason).toContain('not an agent address');
  });
});

describe('policyEquals and describePolicy', () => {
  it('ignores order and repetition', () => {
    expect(policyEquals(policy(['agent:a', 'agent:b#s']), policy(['agent:b#s', 'agent:a', 'agent:a']))).toBe(true);
    expect(policyEquals(policy(['agent:a']), policy(['agent:a', 'any-in-account']))).toBe(false);
    expect(policyEquals(policy(['agent:a#s']), policy(['agent:a']))).toBe(false);
    expect(policyEquals(null, null)).toBe(true);
    expect(policyEquals(policy([]), policy([]))).toBe(true);
  });

  it('describes none, empty and lists', () => {
    expect(describePolicy(null)).toMatch(/^none declared \(fail-closed/);
    expect(describePolicy(policy([]))).toMatch(/^an empty allow_from/);
    expect(describePolicy(policy(['agent:b', 'agent:a']))).toBe('agent:a, agent:b');
  });
});
