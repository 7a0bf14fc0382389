import { readFileSync, readdirSync, statSync, writeFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'smol-toml';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { runOhHai } from '../../helpers/cli.js';
import { tempEnv, type TempEnv } from '../../helpers/env.js';
import { hubCall, startHub, type TestHub } from '../../helpers/hub.js';

// setup / upgrade / login --human against the real reference Hub: the policy is written from
// the account only when none exists, never widened, and the directory decides what is written.

const userConfig = (t: TempEnv) => path.join(t.env.XDG_CONFIG_HOME!, 'oh-hai', 'config.toml');
const credentials = (t: TempEnv) => path.join(t.env.XDG_CONFIG_HOME!, 'oh-hai', 'credentials.json');
const allowFrom = (t: TempEnv): string[] => (parse(readFileSync(userConfig(t), 'utf8')) as { bridge?: { allow_from?: string[] } }).bridge?.allow_from ?? [];

const writeUserConfig = (t: TempEnv, text: string) => {
  mkdirSync(path.dirname(userConfig(t)), { recursive: true });
  writeFileSync(userConfig(t), text);
};

/** Every regular file under a directory, recursively. */
const filesUnder = (dir: string): string[] => {
  let out: string[] = [];
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return out;
  }
  for (const n of names) {
    const p = path.join(dir, n);
    const s = statSync(p);
    if (s.isDirectory()) out = out.concat(filesUnder(p));
    else if (s.isFile()) out.push(p);
  }
  return out;
};

let t: TempEnv;
afterEach(() => t?.cleanup());

describe('the account directory read with an agent token', () => {
  let hub: TestHub;
  let builder: { id: string; token: string };
  let reviewer: { id: string; token: string };
  let retired: { id: string; token: string };
  const long = 'x'.repeat(513);
  const configTokens = [
    'cfg_ok=tok_cfg_ok_0123456789',
    "cfg_o'brien=tok_cfg_q1_0123456789",
    'cfg_"say"=tok_cfg_q2_0123456789',
    'cfg#hash=tok_cfg_b1_0123456789',
    'cfg sp=tok_cfg_b2_0123456789',
    'cfg\u0007bell=tok_cfg_b3_0123456789',
    `cfg'both"=tok_cfg_b4_0123456789`,
    `${long}=tok_cfg_b5_0123456789`,
  ].join(',');

  beforeAll(async () => {
    hub = await startHub({ env: { MA2H_AGENT_TOKENS: configTokens } });
    builder = await hub.mintAgent('builder');
    reviewer = await hub.mintAgent('reviewer');
    retired = await hub.mintAgent('retired');
    const r = await hubCall(hub, 'POST', `/v1/account/agents/${retired.id}/revoke`, { token: hub.humanToken, body: {} });
    expect(r.status).toBeLessThan(300);
  });
  afterAll(() => hub.dispose());

  it('setup --hub --token-stdin logs in, records the Hub, writes every matchable agent, and names the next command', async () => {
    t = tempEnv();
    const r = await runOhHai(['setup', '--hub', hub.url, '--token-stdin'], { env: t.env, input: `${builder.token}\n` });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain(`logged in to ${hub.url} as agent ${builder.id} ("builder")`);
    expect(allowFrom(t).sort()).toEqual([builder.id, reviewer.id, 'cfg_ok', "cfg_o'brien", 'cfg_"say"'].map((id) => `agent:${id}`).sort());
    const text = readFileSync(userConfig(t), 'utf8');
    expect((parse(text) as { hub: { url: string } }).hub.url).toBe(hub.url);
    expect(text).toContain(`"agent:cfg_o'brien", # source: config`);
    expect(text).toContain(`'agent:cfg_"say"', # source: config`);

    expect(r.stderr).toContain('read with the agent token');
    expect(r.stderr).toContain("agent:cfg_ok  (source: config — the Hub's configured token store)");
    expect(r.stderr).toContain(`skipped agent "${retired.id}" ("retired"): it is revoked at the Hub`);
    expect(r.stderr).toContain(`dropped agent "cfg#hash": it contains '#'`);
    expect(r.stderr).toContain('dropped agent "cfg sp": it contains whitespace');
    expect(r.stderr).toContain('dropped agent "cfg\\u0007bell": it contains a control character');
    expect(r.stderr).toContain(`dropped agent "cfg'both\\"": it contains both quote kinds`);
    expect(r.stderr).toContain("it is 513 bytes, over the Hub's 512-byte bound");
    expect(r.stderr.match(/so the bridge could never match it/g)).toHaveLength(5);
    expect(r.stderr).toContain('#1127');
    expect(r.stderr.trimEnd().split('\n').at(-1)).toBe('next: run `oh-hai bridge` as a background task — and re-run it after every exit.');

    expect(statSync(credentials(t)).mode & 0o777).toBe(0o600);
    expect(statSync(path.dirname(credentials(t))).mode & 0o777).toBe(0o700);
    expect(readFileSync(credentials(t), 'utf8')).toContain(builder.token);
    expect(text).not.toContain(builder.token);
    for (const f of filesUnder(t.env.XDG_STATE_HOME!)) expect(readFileSync(f, 'utf8'), f).not.toContain(builder.token);
    expect(r.stdout + r.stderr).not.toContain(builder.token);
  });

  it('upgrade with only MA2H_AGENT_TOKENS and MA2H_HUB_URL in the environment writes the policy and says so', async () => {
    t = tempEnv({ MA2H_HUB_URL: hub.url, MA2H_AGENT_TOKENS: 'cfg_ok=tok_cfg_ok_0123456789' });
    writeUserConfig(t, '# fleet host\n[bridge]\nwait_seconds = 30 # short waits here\n');
    const r = await runOhHai(['upgrade'], { env: t.env });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain(`sender policy: wrote [bridge] allow_from to ${userConfig(t)}`);
    const text = readFileSync(userConfig(t), 'utf8');
    expect(text.startsWith('# fleet host\n[bridge]\n')).toBe(true);
    expect(text).toContain('wait_seconds = 30 # short waits here\n');
    expect(allowFrom(t)).toContain(`agent:${builder.id}`);
    expect(allowFrom(t)).toContain('agent:cfg_ok');
    expect(text).not.toContain('tok_cfg_ok');
  });

  it('two upgrades at once: one writes, the other finds the policy and leaves it alone', async () => {
    t = tempEnv({ MA2H_HUB_URL: hub.url, OH_HAI_TOKEN: builder.token });
    const [a, b] = await Promise.all([runOhHai(['upgrade'], { env: t.env }), runOhHai(['upgrade'], { env: t.env })]);
    expect([a.code, b.code]).toEqual([0, 0]);
    const wrote = [a, b].filter((r) => r.stderr.includes('sender policy: wrote'));
    const kept = [a, b].filter((r) => r.stderr.includes('already exists'));
    expect([wrote.length, kept.length]).toEqual([1, 1]);
    expect(readFileSync(userConfig(t), 'utf8').match(/allow_from/g)).toHaveLength(1);
  });

  it('upgrade with a Hub but no credential is exit 3 with the command that fixes it', async () => {
    t = tempEnv();
    const r = await runOhHai(['upgrade', '--hub', hub.url], { env: t.env });
    expect(r.code).toBe(3);
    expect(r.stderr).toContain(`oh-hai upgrade: FATAL (exit 3, no_credential) — no agent credential for ${hub.url}`);
    expect(r.stderr).toContain(`oh-hai login --hub ${hub.url} --token-stdin < token-file`);
    expect(r.stderr).toContain('export OH_HAI_TOKEN=<token>');
  });
});

describe('the never-widen rule', () => {
  let hub: TestHub;
  let builder: { id: string; token: string };

  beforeAll(async () => {
    hub = await startHub();
    builder = await hub.mintAgent('builder');
    await hub.mintAgent('minted-later');
  });
  afterAll(() => hub.dispose());

  it.each([['["agent:PEER"]'], ['[]']])('a narrow allow_from = %s stays byte-for-byte across setup, upgrade and login --human', async (list) => {
    t = tempEnv();
    const narrow = `# typed by hand\n[hub]\nurl = "${hub.url}"\n\n[bridge]\nallow_from = ${list.replace('PEER', builder.id)} # only this\n`;
    writeUserConfig(t, narrow);
    const runs = [
      await runOhHai(['setup', '--token-stdin'], { env: t.env, input: builder.token }),
      await runOhHai(['upgrade'], { env: t.env }),
      await runOhHai(['login', '--human', '--token-stdin'], { env: t.env, input: hub.humanToken }),
    ];
    for (const r of runs) {
      expect(r.code, r.stderr).toBe(0);
      expect(readFileSync(userConfig(t), 'utf8')).toBe(narrow);
      expect(r.stderr).toContain(`sender policy: [bridge] allow_from already exists in ${userConfig(t)}`);
      expect(r.stderr).toContain('never widened, however narrow');
      expect(r.stderr).toContain(`add "agent:<id>" to [bridge] allow_from in ${userConfig(t)}`);
      expect(r.stderr).toContain('clear the key entirely and re-run `oh-hai upgrade`');
      expect(r.stderr).toContain('#1127');
    }
  });

  it('upgrade with a policy in place makes no Hub call: it needs neither a reachable Hub nor a credential', async () => {
    t = tempEnv();
    writeUserConfig(t, '[bridge]\nallow_from = ["agent:agt_x"]\n');
    const r = await runOhHai(['upgrade', '--hub', 'http://127.0.0.1:9'], { env: t.env });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain('already exists');
  });

  it('clearing the key and re-running upgrade writes the whole account list fresh', async () => {
    t = tempEnv({ OH_HAI_TOKEN: builder.token });
    writeUserConfig(t, `[hub]\nurl = "${hub.url}"\n[bridge]\n`);
    const r = await runOhHai(['upgrade'], { env: t.env });
    expect(r.code, r.stderr).toBe(0);
    expect(allowFrom(t)).toHaveLength(2);
  });
});

describe('a Hub without an agent directory', () => {
  let hub: TestHub;
  let builder: { id: string; token: string };

  beforeAll(async () => {
    hub = await startHub({ args: ['--no-agent-directory'] });
    builder = await hub.mintAgent('builder');
  });
  afterAll(() => hub.dispose());

  it('setup with an agent token writes no policy, stays fail-closed, and prints login --human as the fix', async () => {
    t = tempEnv();
    const r = await runOhHai(['setup', '--hub', hub.url, '--token-stdin'], { env: t.env, input: builder.token });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain(`the Hub at ${hub.url} does not advertise an account agent directory`);
    expect(r.stderr).toContain('The bridge stays fail-closed');
    expect(r.stderr).toContain(`Fix: oh-hai login --human --hub ${hub.url} --token-stdin < human-token-file`);
    expect(parse(readFileSync(userConfig(t), 'utf8'))).toEqual({ hub: { url: hub.url } });

    const human = await runOhHai(['login', '--human', '--token-stdin'], { env: t.env, input: hub.humanToken });
    expect(human.code, human.stderr).toBe(0);
    expect(human.stderr).toContain('read with the human token');
    expect(allowFrom(t)).toEqual([`agent:${builder.id}`]);
  });
});
