import { afterEach, describe, expect, it } from 'vitest';
import { parsePolicy } from '../../../src/config/index.js';
import type { Coded } from '../../../src/core/index.js';
import type { AgentRow } from '../../../src/hub/contract/index.js';
import { resolveAllowFrom } from '../../../src/cli/resolve/allow-from.js';
import { readDirectoryCache, writeDirectoryCache, type DirectoryCacheKey } from '../../../src/spool/index.js';
import { tempEnv, type TempEnv } from '../../helpers/env.js';

const row = (id: string, label: string | null, revoked = false): AgentRow => ({ id, label, revoked, source: 'account' });
const NOW = '2026-12-01T22:00:00.000Z';

let temp: TempEnv | null = null;
afterEach(() => temp?.cleanup());

function cacheKey(): DirectoryCacheKey {
  temp = tempEnv();
  return { stateRoot: temp.env.XDG_STATE_HOME!, hubUrl: 'http://127.0.0.1:1', agentId: 'agt_me' };
}

/** A directory fetch that counts its calls and answers `rows`. */
function hub(rows: AgentRow[] | 'fails') {
  const calls = { n: 0 };
  const fetch = async (): Promise<Coded<AgentRow[]>> => {
    calls.n += 1;
    return rows === 'fails' ? { ok: false, error: { code: 'hub_unreachable', exit: 13, message: 'down' } } : { ok: true, value: rows };
  };
  return { calls, fetch };
}

describe('--allow-from labels', () => {
  it('a unique label resolves to agent:<id> from the cache with no fetch; the line shows id and label', async () => {
    const key = cacheKey();
    writeDirectoryCache(key, [row('agt_rev', 'reviewer'), row('agt_b', 'builder')], NOW);
    const h = hub('fails');
    const r = await resolveAllowFrom(['reviewer', 'agent:agt_x', 'any-in-account', 'builder#sess_1'], key, h.fetch);
    expect(r).toEqual({
      ok: true,
      value: {
        items: ['agent:agt_rev', 'agent:agt_x', 'any-in-account', 'agent:agt_b#sess_1'],
        lines: [
          '--allow-from reviewer is agent:agt_rev (reviewer), from the directory cache: the policy names that id, so relabelling an agent cannot widen it',
          '--allow-from builder#sess_1 is agent:agt_b#sess_1 (builder), from the directory cache: the policy names that id, so relabelling an agent cannot widen it',
        ],
      },
    });
    expect(h.calls.n).toBe(0);
    // What the connection is given is a policy of ids only.
    expect(r.ok && parsePolicy(r.value.items).ok).toBe(true);
  });

  it('no labels: nothing is read or fetched, the items pass through', async () => {
    const h = hub('fails');
    expect(await resolveAllowFrom(['agent:agt_1', 'any-in-account'], cacheKey(), h.fetch)).toEqual({
      ok: true,
      value: { items: ['agent:agt_1', 'any-in-account'], lines: [] },
    });
    expect(h.calls.n).toBe(0);
  });

  it('a cache miss (no cache, or a label it does not know) fetches the directory once for every label', async () => {
    const key = cacheKey();
    const h = hub([row('agt_rev', 'reviewer'), row('agt_new', 'newcomer')]);
    const r = await resolveAllowFrom(['reviewer', 'newcomer'], key, h.fetch);
    expect(r.ok && r.value.items).toEqual(['agent:agt_rev', 'agent:agt_new']);
    expect(r.ok && r.value.lines[0]).toContain('from the agent directory');
    expect(h.calls.n).toBe(1);
    writeDirectoryCache(key, [row('agt_rev', 'reviewer')], NOW);
    const again = hub([row('agt_rev', 'reviewer'), row('agt_new', 'newcomer')]);
    const mixed = await resolveAllowFrom(['reviewer', 'newcomer'], key, again.fetch);
    expect(mixed.ok && mixed.value.lines.map((l) => l.replace(/.*from (the [a-z ]+):.*/, '$1'))).toEqual(['the directory cache', 'the agent directory']);
    expect(again.calls.n).toBe(1);
  });

  it('an unknown label is exit 2 naming the agents there are, after a fresh look', async () => {
    const key = cacheKey();
    writeDirectoryCache(key, [row('agt_rev', 'reviewer')], NOW);
    const h = hub([row('agt_rev', 'reviewer'), row('agt_b', 'builder')]);
    const r = await resolveAllowFrom(['carol'], key, h.fetch);
    expect(!r.ok && r.error).toMatchObject({ code: 'unknown_name', exit: 2 });
    expect(!r.ok && r.error.message).toMatch(
      /^--allow-from "carol" is no agent's label or id in this account's directory\. .*Agents: reviewer \(agent:agt_rev\), builder \(agent:agt_b\)/,
    );
    expect(h.calls.n).toBe(1);
  });

  it('a label two agents share is exit 2 naming both ids: several in the cache are a miss, and one fresh look confirms them', async () => {
    const key = cacheKey();
    writeDirectoryCache(key, [row('agt_t1', 'twin'), row('agt_t2', 'twin')], NOW);
    const h = hub([row('agt_t1', 'twin'), row('agt_t2', 'twin')]);
    const r = await resolveAllowFrom(['twin'], key, h.fetch);
    expect(!r.ok && r.error).toMatchObject({ code: 'ambiguous_name', exit: 2 });
    expect(!r.ok && r.error.message).toContain('twin (agent:agt_t1) by its label; twin (agent:agt_t2) by its label');
    expect(!r.ok && r.error.message).toContain('--allow-from agent:agt_t1');
    expect(h.calls.n).toBe(1);
  });

  it('a label that looks like an id: a bare id resolves to that agent; a label equal to another agent`s id is ambiguous', async () => {
    const key = cacheKey();
    const h = hub([row('agt_rev', 'reviewer'), row('agt_mimic', 'agt_rev'), row('agt_b', 'builder')]);
    const bare = await resolveAllowFrom(['agt_b'], key, h.fetch);
    expect(bare.ok && bare.value.items).toEqual(['agent:agt_b']);
    const clash = await resolveAllowFrom(['agt_rev'], key, h.fetch);
    expect(!clash.ok && clash.error).toMatchObject({ code: 'ambiguous_name', exit: 2 });
    expect(!clash.ok && clash.error.message).toContain('reviewer (agent:agt_rev) by its id; agt_rev (agent:agt_mimic) by its label');
    // agent:… is an address, never looked up, whatever it looks like.
    expect(await resolveAllowFrom(['agent:agt_rev'], key, h.fetch)).toMatchObject({ ok: true, value: { items: ['agent:agt_rev'], lines: [] } });
  });

  it('a revoked agent`s label is refused; a fetch that fails is the failure, and nothing is cached by a failure', async () => {
    const key = cacheKey();
    const revoked = await resolveAllowFrom(['old'], key, hub([row('agt_old', 'old', true)]).fetch);
    expect(!revoked.ok && revoked.error.message).toMatch(/names a revoked agent/);
    const down = await resolveAllowFrom(['reviewer'], key, hub('fails').fetch);
    expect(!down.ok && down.error).toMatchObject({ code: 'hub_unreachable', exit: 13 });
    expect(readDirectoryCache(key)).toBeNull();
  });
});
