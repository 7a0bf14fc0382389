import { chmodSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  credentialsPath,
  identitiesPath,
  identityKey,
  lookupCachedAgentId,
  parseAgentTokens,
  readCredentials,
  rememberAgentId,
  resolveAgentCredential,
  resolveHumanCredential,
  updateCredentials,
} from '../../../src/config/index.js';
import { tempEnv, type TempEnv } from '../../helpers/env.js';

const HUB = 'http://127.0.0.1:7000';
const SECRET = 'tok_SECRET_value_123';

let t: TempEnv;
afterEach(() => t?.cleanup());

const storeAgents = async (env: NodeJS.ProcessEnv, agents: { id: string; token: string }[], hub = HUB) => {
  const r = await updateCredentials(env, (f) => {
    f.hubs.push({ hub, agents: agents.map((a) => ({ ...a, label: `label-${a.id}` })), human: null });
  });
  if (!r.ok) throw new Error(r.error.message);
};

describe('MA2H_AGENT_TOKENS', () => {
  it('parses comma-separated <agent_id>=<token> pairs, splitting at the first =', () => {
    expect(parseAgentTokens(' agt_a=t1 , agt_b=dG9r==,agt_a=t1')).toEqual({
      ok: true,
      value: [
        { id: 'agt_a', token: 't1' },
        { id: 'agt_b', token: 'dG9r==' },
      ],
    });
  });

  it.each([
    [`agt_a=t1,${SECRET}`, 'pair 2 of 2 is not <agent_id>=<token>'],
    [`=${SECRET}`, 'pair 1 of 1 is not <agent_id>=<token>'],
    ['agt_a=', 'pair 1 of 1 (agent agt_a): the token is unusable because it is empty'],
    [`agt_a=${SECRET} x`, 'the token is unusable because it contains whitespace'],
    [`agt a=${SECRET}`, 'the agent id is unusable because it contains whitespace'],
    [`agt_a=${SECRET},agt_a=other`, 'agent agt_a appears twice with different tokens'],
  ])('refuses %j by position, never quoting the token', (raw, message) => {
    const r = parseAgentTokens(raw);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.error.exit).toBe(2);
    expect(r.error.message).toContain(message);
    expect(r.error.message).not.toContain(SECRET);
  });
});

describe('resolveAgentCredential', () => {
  it('OH_HAI_TOKEN > MA2H_AGENT_TOKENS > credentials file', async () => {
    t = tempEnv();
    await storeAgents(t.env, [{ id: 'agt_file', token: 'file-token' }]);
    const all = { ...t.env, OH_HAI_TOKEN: 'one-token', MA2H_AGENT_TOKENS: 'agt_env=env-token' };
    expect(resolveAgentCredential({ env: all, hubUrl: HUB })).toMatchObject({ ok: true, value: { token: 'one-token', agentId: null, source: 'OH_HAI_TOKEN' } });
    expect(resolveAgentCredential({ env: { ...all, OH_HAI_TOKEN: '' }, hubUrl: HUB })).toMatchObject({
      ok: true,
      value: { token: 'env-token', agentId: 'agt_env', source: 'MA2H_AGENT_TOKENS' },
    });
    expect(resolveAgentCredential({ env: t.env, hubUrl: HUB })).toMatchObject({
      ok: true,
      value: { token: 'file-token', agentId: 'agt_file', label: 'label-agt_file', source: 'credentials' },
    });
  });

  it('--agent picks among several; several without --agent is a usage error listing the ids', async () => {
    t = tempEnv();
    await storeAgents(t.env, [
      { id: 'agt_1', token: 'tok-1' },
      { id: 'agt_2', token: 'tok-2' },
    ]);
    expect(resolveAgentCredential({ env: t.env, hubUrl: HUB, agent: 'agt_2' })).toMatchObject({ ok: true, value: { token: 'tok-2', agentId: 'agt_2' } });
    const several = resolveAgentCredential({ env: t.env, hubUrl: HUB });
    expect(several).toMatchObject({ ok: false, error: { exit: 2, code: 'several_agents' } });
    if (!several.ok) expect(several.error.message).toContain('several identities (agt_1, agt_2); pick one with --agent <id>');
    const unknown = resolveAgentCredential({ env: t.env, hubUrl: HUB, agent: 'agt_9' });
    expect(unknown).toMatchObject({ ok: false, error: { exit: 2, code: 'unknown_agent' } });
    const env = { ...t.env, MA2H_AGENT_TOKENS: 'agt_x=tx,agt_y=ty' };
    expect(resolveAgentCredential({ env, hubUrl: HUB, agent: 'agt_y' })).toMatchObject({ ok: true, value: { token: 'ty', source: 'MA2H_AGENT_TOKENS' } });
    const envSeveral = resolveAgentCredential({ env, hubUrl: HUB });
    expect(envSeveral).toMatchObject({ ok: false, error: { exit: 2 } });
    if (!envSeveral.ok) expect(envSeveral.error.message).toContain('MA2H_AGENT_TOKENS holds several identities (agt_x, agt_y)');
    // The variable cannot carry an id with ',' or '=' (MA2H allows both): the refusal says so and what to use instead.
    if (!envSeveral.ok)
      expect(envSeveral.error.message).toContain(
        'an agent id containing "," or "=" cannot be written in MA2H_AGENT_TOKENS: give its token with OH_HAI_TOKEN or oh-hai login instead',
      );
    // The credentials file can: the same refusal from it does not blame a format it does not have.
    if (!several.ok) expect(several.error.message).not.toContain('MA2H_AGENT_TOKENS');
  });

  it("the credentials file is keyed by Hub: another Hub's token never resolves", async () => {
    t = tempEnv();
    await storeAgents(t.env, [{ id: 'agt_other', token: SECRET }], 'https://other.example');
    const r = resolveAgentCredential({ env: t.env, hubUrl: HUB });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.error).toMatchObject({ exit: 3, code: 'no_credential' });
    expect(r.error.message).toBe(
      `no agent credential for ${HUB}: store one with \`oh-hai login --hub ${HUB} --token-stdin < token-file\`, or export OH_HAI_TOKEN=<token> in the agent's environment`,
    );
  });

  it('an OH_HAI_TOKEN with whitespace inside is refused without being quoted', () => {
    t = tempEnv();
    const r = resolveAgentCredential({ env: { ...t.env, OH_HAI_TOKEN: `${SECRET}\nmore` }, hubUrl: HUB });
    expect(r).toMatchObject({ ok: false, error: { exit: 2, code: 'invalid_token' } });
    if (!r.ok) expect(r.error.message).not.toContain(SECRET);
  });

  it('OH_HAI_TOKEN takes its agent id from the identity cache; a different --agent is refused', async () => {
    t = tempEnv();
    const stateRoot = t.env.XDG_STATE_HOME!;
    const env = { ...t.env, OH_HAI_TOKEN: SECRET };
    expect(resolveAgentCredential({ env, hubUrl: HUB, stateRoot })).toMatchObject({ ok: true, value: { agentId: null } });
    await rememberAgentId({ stateRoot, hubUrl: HUB, token: SECRET, agentId: 'agt_cached' });
    expect(resolveAgentCredential({ env, hubUrl: HUB, stateRoot })).toMatchObject({ ok: true, value: { agentId: 'agt_cached' } });
    expect(resolveAgentCredential({ env, hubUrl: HUB, stateRoot, agent: 'agt_cached' }).ok).toBe(true);
    const other = resolveAgentCredential({ env, hubUrl: HUB, stateRoot, agent: 'agt_else' });
    expect(other).toMatchObject({ ok: false, error: { exit: 2 } });
  });

  it('a damaged credentials file is exit 3 naming the file and the fix, never its content', () => {
    t = tempEnv();
    const file = credentialsPath(t.env);
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, `{"version":1,"hubs":[{"hub":"${HUB}","agents":[{"id":"a","token":"${SECRET}"`);
    const r = resolveAgentCredential({ env: t.env, hubUrl: HUB });
    expect(r).toMatchObject({ ok: false, error: { exit: 3, code: 'credentials_damaged' } });
    if (r.ok) return;
    expect(r.error.message).toContain(file);
    expect(r.error.message).toContain('oh-hai login --token-stdin < token-file');
    expect(r.error.message).not.toContain(SECRET);
  });
});

describe('the credentials file', () => {
  it('is 0600 in a 0700 directory, and a file others can read is narrowed and reported', async () => {
    t = tempEnv();
    await storeAgents(t.env, [{ id: 'agt_a', token: SECRET }]);
    const file = credentialsPath(t.env);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(path.dirname(file)).mode & 0o777).toBe(0o700);
    chmodSync(file, 0o644);
    const r = readCredentials(t.env);
    expect(r.ok).toBe(true);
    if (r.ok) expect(r.value.warnings[0]).toContain('was readable by others (mode 644); narrowed it to 600');
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });

  it('serialises concurrent writers: every login lands', async () => {
    t = tempEnv();
    await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        updateCredentials(t.env, (f) => {
          let hub = f.hubs.find((h) => h.hub === HUB);
          if (!hub) f.hubs.push((hub = { hub: HUB, agents: [], human: null }));
          hub.agents.push({ id: `agt_${i}`, label: null, token: `tok-${i}` });
        }),
      ),
    );
    const r = readCredentials(t.env);
    if (!r.ok) throw new Error(r.error.message);
    expect(r.value.file.hubs[0]?.agents.map((a) => a.id).sort()).toEqual(Array.from({ length: 8 }, (_, i) => `agt_${i}`));
  });

  it('drops a Hub element left empty', async () => {
    t = tempEnv();
    await storeAgents(t.env, [{ id: 'agt_a', token: 'x' }]);
    await updateCredentials(t.env, (f) => {
      for (const h of f.hubs) h.agents = [];
    });
    expect(JSON.parse(readFileSync(credentialsPath(t.env), 'utf8'))).toEqual({ version: 1, hubs: [] });
  });
});

describe('resolveHumanCredential', () => {
  it('resolves the stored human token, else exit 3 with login --human', async () => {
    t = tempEnv();
    const missing = resolveHumanCredential({ env: t.env, hubUrl: HUB });
    expect(missing).toMatchObject({ ok: false, error: { exit: 3, code: 'no_human_credential' } });
    if (!missing.ok) expect(missing.error.message).toContain(`oh-hai login --human --hub ${HUB} --token-stdin < human-token-file`);
    await updateCredentials(t.env, (f) => {
      f.hubs.push({ hub: HUB, agents: [], human: { account_id: 'acct_1', token: 'human-tok' } });
    });
    expect(resolveHumanCredential({ env: t.env, hubUrl: HUB })).toMatchObject({ ok: true, value: { token: 'human-tok', accountId: 'acct_1' } });
  });
});

describe('the identity cache', () => {
  it('stores a hash of (Hub origin, token) → agent id, 0600, never the token', async () => {
    t = tempEnv();
    const stateRoot = t.env.XDG_STATE_HOME!;
    expect(lookupCachedAgentId({ stateRoot, hubUrl: HUB, token: SECRET })).toBeNull();
    await rememberAgentId({ stateRoot, hubUrl: HUB, token: SECRET, agentId: 'agt_a' });
    await rememberAgentId({ stateRoot, hubUrl: 'https://other.example', token: SECRET, agentId: 'agt_b' });
    expect(lookupCachedAgentId({ stateRoot, hubUrl: HUB, token: SECRET })).toBe('agt_a');
    expect(lookupCachedAgentId({ stateRoot, hubUrl: 'https://other.example', token: SECRET })).toBe('agt_b');
    const file = identitiesPath(stateRoot);
    expect(file).toBe(path.join(stateRoot, 'oh-hai', 'identities.json'));
    const text = readFileSync(file, 'utf8');
    expect(text).not.toContain(SECRET);
    expect(JSON.parse(text).ids[identityKey(HUB, SECRET)]).toBe('agt_a');
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });

  it('a damaged cache reads as empty and is rewritten', async () => {
    t = tempEnv();
    const stateRoot = t.env.XDG_STATE_HOME!;
    mkdirSync(path.dirname(identitiesPath(stateRoot)), { recursive: true });
    writeFileSync(identitiesPath(stateRoot), 'garbage');
    expect(lookupCachedAgentId({ stateRoot, hubUrl: HUB, token: SECRET })).toBeNull();
    await rememberAgentId({ stateRoot, hubUrl: HUB, token: SECRET, agentId: 'agt_a' });
    expect(lookupCachedAgentId({ stateRoot, hubUrl: HUB, token: SECRET })).toBe('agt_a');
  });
});
