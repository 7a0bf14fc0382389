import { describe, expect, it } from 'vitest';
import { checkDestination } from '../../../src/cli/messaging/send.js';
import { labelFor, resolveName } from '../../../src/hub/contract/index.js';
import { withLabel } from '../../../src/reader/index.js';
import type { AgentRow } from '../../../src/hub/contract/index.js';

const row = (id: string, label: string | null, revoked = false): AgentRow => ({ id, label, revoked, source: 'account' });

const DIRECTORY: AgentRow[] = [
  row('agt_builder1', 'builder'),
  row('agt_reviewer1', 'reviewer'),
  row('agt_twin_a', 'twin'),
  row('agt_twin_b', 'twin'),
  row('agt_gone', 'retired', true),
  // A label that is another agent's id: a bare "agt_builder1" matches both.
  row('agt_impostor', 'agt_builder1'),
  row('agt_plain', 'plain'),
  row('agt_nolabel', null),
];

describe('agent names (docs/messaging.md "Names")', () => {
  it('a label unique in the account resolves to agent:<id>, keeping a #sess_ suffix', () => {
    expect(resolveName('reviewer', DIRECTORY, '--to')).toEqual({
      ok: true,
      value: { address: 'agent:agt_reviewer1', agentId: 'agt_reviewer1', label: 'reviewer', byName: true },
    });
    const pinned = resolveName('reviewer#sess_abc', DIRECTORY, '--to');
    expect(pinned.ok && pinned.value.address).toBe('agent:agt_reviewer1#sess_abc');
  });

  it('an ambiguous label is exit 2 naming every candidate and how to pick one', () => {
    const r = resolveName('twin', DIRECTORY, '--to');
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.error.exit).toBe(2);
    expect(r.error.code).toBe('ambiguous_name');
    expect(r.error.message).toContain('twin (agent:agt_twin_a) by its label');
    expect(r.error.message).toContain('twin (agent:agt_twin_b) by its label');
    expect(r.error.message).toContain('--to agent:agt_twin_a');
  });

  it('an unknown label is exit 2 naming the agents there are, with a case-folded suggestion', () => {
    const r = resolveName('Reviewer', DIRECTORY, '--to');
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.error.exit).toBe(2);
    expect(r.error.code).toBe('unknown_name');
    expect(r.error.message).toMatch(/"Reviewer" is no agent's label or id/);
    expect(r.error.message).toContain('did you mean reviewer (agent:agt_reviewer1)?');
    expect(r.error.message).toContain('builder (agent:agt_builder1)');
    expect(r.error.message).not.toContain('agt_gone');
  });

  it('a revoked agent is named as revoked, not resolved', () => {
    const r = resolveName('retired', DIRECTORY, '--to');
    expect(!r.ok && r.error.message).toMatch(/names a revoked agent \(retired \(agent:agt_gone\)\)/);
  });

  it('a bare id resolves to that agent; an id that is also another agent’s label is ambiguous', () => {
    const byId = resolveName('agt_plain', DIRECTORY, '--to');
    expect(byId.ok && byId.value).toEqual({ address: 'agent:agt_plain', agentId: 'agt_plain', label: 'plain', byName: true });
    const unlabelled = resolveName('agt_nolabel', DIRECTORY, '--to');
    expect(unlabelled.ok && unlabelled.value.address).toBe('agent:agt_nolabel');
    const clash = resolveName('agt_builder1', DIRECTORY, '--to');
    expect(clash.ok).toBe(false);
    if (clash.ok) return;
    expect(clash.error.code).toBe('ambiguous_name');
    expect(clash.error.message).toContain('builder (agent:agt_builder1) by its id');
    expect(clash.error.message).toContain('agt_builder1 (agent:agt_impostor) by its label');
  });

  it('an agent: address is never looked up: sent as written, labelled when the directory knows it', () => {
    expect(resolveName('agent:agt_reviewer1#sess_x', DIRECTORY, '--to')).toEqual({
      ok: true,
      value: { address: 'agent:agt_reviewer1#sess_x', agentId: 'agt_reviewer1', label: 'reviewer', byName: false },
    });
    // agent:reviewer is an address whose id is "reviewer": not resolved by label.
    const literal = resolveName('agent:reviewer', DIRECTORY, '--to');
    expect(literal.ok && literal.value).toEqual({ address: 'agent:reviewer', agentId: 'reviewer', label: null, byName: false });
  });

  it('checkDestination refuses only a malformed shape before any Hub call', () => {
    expect(checkDestination('reviewer', '--to').ok).toBe(true);
    expect(checkDestination('agent:agt_1#sess_2', '--to').ok).toBe(true);
    const badSession = checkDestination('reviewer#nope', '--to');
    expect(!badSession.ok && badSession.error).toMatchObject({ code: 'bad_address', exit: 2 });
    const badAddress = checkDestination('agent:', '--to');
    expect(!badAddress.ok && badAddress.error).toMatchObject({ code: 'bad_address', exit: 2 });
    const empty = checkDestination('#sess_1', '--to');
    expect(!empty.ok && empty.error.message).toMatch(/names no agent/);
  });

  it('summary labels come from the cache map and only for agent addresses', () => {
    const labels = new Map([['agt_reviewer1', 'reviewer']]);
    expect(labelFor(labels, 'agent:agt_reviewer1#sess_1')).toBe('reviewer');
    expect(labelFor(labels, 'human:acct_1')).toBeNull();
    expect(withLabel('agent:agt_reviewer1', labels)).toBe('agent:agt_reviewer1 (reviewer)');
    expect(withLabel('agent:agt_other', labels)).toBe('agent:agt_other');
    // A label is shown as safely as an address: one that is not plain is quoted.
    expect(withLabel('agent:agt_reviewer1', new Map([['agt_reviewer1', 'code reviewer\u202e']]))).toBe('agent:agt_reviewer1 ("code reviewer\\u202e")');
  });
});
