import { describe, expect, it } from 'vitest';
import { type LoadedConfig, type FileSettings, requireHubUrl, resolveSettings, type SettingsFlags } from '../../../src/config/index.js';

const loaded = (user: FileSettings, project: FileSettings | null = null, warnings: string[] = []): LoadedConfig => ({
  user: { path: '/u/config.toml', found: true, settings: user },
  project: project && { path: '/p/.oh-hai/config.toml', found: true, settings: project },
  files: [],
  warnings,
});

const resolve = (flags: SettingsFlags, env: NodeJS.ProcessEnv, l: LoadedConfig) => {
  const r = resolveSettings({ flags, env, loaded: l });
  if (!r.ok) throw new Error(r.error.message);
  return r.value;
};

const failure = (flags: SettingsFlags, env: NodeJS.ProcessEnv, l: LoadedConfig = loaded({ numbers: {} })) => {
  const r = resolveSettings({ flags, env, loaded: l });
  if (r.ok) throw new Error('expected a failure');
  return r.error;
};

describe('resolveSettings precedence: flag > environment > project > user > default', () => {
  const user: FileSettings = { hubUrl: 'https://user.example', numbers: {} };
  const project: FileSettings = { hubUrl: 'https://project.example', numbers: {} };
  const env = { MA2H_HUB_URL: 'https://env.example' };

  it.each([
    ['flag', { hub: 'https://flag.example/' }, env, loaded(user, project), 'https://flag.example'],
    ['env', {}, env, loaded(user, project), 'https://env.example'],
    ['project', {}, {}, loaded(user, project), 'https://project.example'],
    ['user', {}, {}, loaded(user), 'https://user.example'],
    ['none', {}, { MA2H_HUB_URL: '' }, loaded({ numbers: {} }), null],
  ] as const)('Hub URL from %s', (source, flags, e, l, url) => {
    const s = resolve(flags, e, l);
    expect(s.hubUrl).toBe(url);
    expect(s.hubUrlSource).toBe(source);
  });

  const knobs = [
    ['waitSeconds', 'wait', 'OH_HAI_WAIT_SECONDS', 540],
    ['intervalSeconds', 'interval', 'OH_HAI_INTERVAL_SECONDS', 5],
    ['maxRetries', 'maxRetries', 'OH_HAI_MAX_RETRIES', 8],
  ] as const;

  it.each(knobs)('%s: flag > env > user > default, fractions from text allowed', (knob, flag, variable, fallback) => {
    const isInt = knob === 'maxRetries';
    const userFile = loaded({ numbers: { [knob]: 3 } });
    const flagValue = isInt ? '1' : '0.25';
    const envValue = isInt ? '2' : '0.5';
    const all = resolve({ [flag]: flagValue }, { [variable]: envValue }, userFile);
    expect([all.bridge[knob], all.sources[knob]]).toEqual([Number(flagValue), 'flag']);
    const fromEnv = resolve({}, { [variable]: envValue }, userFile);
    expect([fromEnv.bridge[knob], fromEnv.sources[knob]]).toEqual([Number(envValue), 'env']);
    const fromUser = resolve({}, {}, userFile);
    expect([fromUser.bridge[knob], fromUser.sources[knob]]).toEqual([3, 'user']);
    const fromDefault = resolve({}, {}, loaded({ numbers: {} }));
    expect([fromDefault.bridge[knob], fromDefault.sources[knob]]).toEqual([fallback, 'default']);
  });

  it('unattendedMaxSeconds: env > user > default; no command takes a flag for it', () => {
    const userFile = loaded({ numbers: { unattendedMaxSeconds: 3 } });
    const fromEnv = resolve({}, { OH_HAI_UNATTENDED_MAX_SECONDS: '0.5' }, userFile);
    expect([fromEnv.bridge.unattendedMaxSeconds, fromEnv.sources.unattendedMaxSeconds]).toEqual([0.5, 'env']);
    expect(resolve({}, {}, userFile).sources.unattendedMaxSeconds).toBe('user');
    expect(resolve({}, {}, loaded({ numbers: {} })).bridge.unattendedMaxSeconds).toBe(900);
  });

  it('transport: flag > user > auto', () => {
    expect(resolve({ transport: 'sse' }, {}, loaded({ transport: 'poll', numbers: {} })).bridge.transport).toBe('sse');
    expect(resolve({}, {}, loaded({ transport: 'poll', numbers: {} })).bridge.transport).toBe('poll');
    expect(resolve({}, {}, loaded({ numbers: {} })).bridge.transport).toBe('auto');
  });

  it('allow_from: the flag overrides the user file; neither is none declared (null)', () => {
    const l = loaded({ allowFrom: ['agent:b', 'agent:a'], numbers: {} });
    const flag = resolve({ allowFrom: ['any-in-account'] }, {}, l);
    expect([flag.bridge.allowFrom, flag.bridge.allowFromSource]).toEqual([['any-in-account'], 'flag']);
    const file = resolve({}, {}, l);
    expect([file.bridge.allowFrom, file.bridge.allowFromSource]).toEqual([['agent:a', 'agent:b'], 'user']);
    const none = resolve({}, {}, loaded({ numbers: {} }));
    expect([none.bridge.allowFrom, none.bridge.allowFromSource, none.bridge.policy]).toEqual([null, 'none', null]);
    const empty = resolve({}, {}, loaded({ allowFrom: [], numbers: {} }));
    expect([empty.bridge.allowFrom, empty.bridge.allowFromSource]).toEqual([[], 'user']);
  });

  it('warns when a project file points at another Hub than the user file', () => {
    const s = resolve({}, {}, loaded(user, project));
    expect(s.warnings).toEqual([
      'the Hub URL https://project.example comes from /p/.oh-hai/config.toml, overriding https://user.example from /u/config.toml; only a token stored for that Hub (oh-hai login) is sent there',
    ]);
    expect(resolve({}, {}, loaded(user, { hubUrl: 'https://user.example', numbers: {} })).warnings).toEqual([]);
  });

  it("passes the files' warnings through and warns on plain http to another host", () => {
    const s = resolve({ hub: 'http://hub.example' }, {}, loaded({ numbers: {} }, null, ['w1']));
    expect(s.warnings).toEqual(['w1', 'the Hub URL http://hub.example is plain http to another host: tokens travel unencrypted; use https://']);
    expect(resolve({ hub: 'http://127.0.0.1:9' }, {}, loaded({ numbers: {} })).warnings).toEqual([]);
  });
});

describe('resolveSettings refusals', () => {
  it.each([
    [{ wait: 'soon' }, {}, '--wait must be a number of seconds (fractions allowed), got the string "soon"'],
    [{}, { OH_HAI_INTERVAL_SECONDS: '0' }, 'OH_HAI_INTERVAL_SECONDS is 0: it must be greater than 0'],
    [{}, { OH_HAI_MAX_RETRIES: '1.5' }, 'OH_HAI_MAX_RETRIES must be a whole number, got the string "1.5"'],
    [
      {},
      { OH_HAI_UNATTENDED_MAX_SECONDS: '0' },
      'OH_HAI_UNATTENDED_MAX_SECONDS is 0: it must be greater than 0: 0 or less never disabled the unattended bound',
    ],
    [{ transport: 'ws' }, {}, '--transport must be one of auto, sse, poll, got the string "ws"'],
    [{ allowFrom: ['agent:a', 'everyone'] }, {}, '--allow-from "everyone" is not a sender policy item'],
    [{ hub: 'hub.example' }, {}, '--hub: "hub.example" is not a URL'],
    [{ hub: 'ftp://hub.example' }, {}, '--hub: "ftp://hub.example" must be http:// or https://'],
    [{ hub: 'https://u:p@hub.example' }, {}, '--hub: the Hub URL carries a user name or password; secrets never go in a URL'],
    [{}, { MA2H_HUB_URL: 'https://hub.example/?x=1' }, 'MA2H_HUB_URL: "https://hub.example/?x=1" has a path, query or fragment'],
  ] as const)('%j %j → usage error', (flags, env, message) => {
    const e = failure(flags, env);
    expect(e.exit).toBe(2);
    expect(e.message).toContain(message);
  });

  describe('a token from the environment never goes to a Hub only a project file names', () => {
    const project: FileSettings = { hubUrl: 'https://repo-chosen.example', numbers: {} };
    it.each([
      ['OH_HAI_TOKEN', { OH_HAI_TOKEN: 'S3CRET' }],
      ['MA2H_AGENT_TOKENS', { MA2H_AGENT_TOKENS: 'agt_a=S3CRET' }],
    ] as const)('%s with a project-only Hub URL is a usage error naming the file, the Hub and how to confirm it', (variable, env) => {
      for (const user of [{ numbers: {} }, { hubUrl: 'https://mine.example', numbers: {} }]) {
        const e = failure({}, env, loaded(user, project));
        expect(e).toMatchObject({ exit: 2, code: 'project_hub_unconfirmed' });
        expect(e.message).toContain(`/p/.oh-hai/config.toml points oh-hai at the Hub https://repo-chosen.example`);
        expect(e.message).toContain(`the token in ${variable} is not tied to any Hub`);
        for (const fix of [
          'export MA2H_HUB_URL=https://repo-chosen.example',
          '--hub https://repo-chosen.example',
          '[hub] url = "https://repo-chosen.example" in /u/config.toml',
        ])
          expect(e.message).toContain(fix);
        expect(e.message).not.toContain('S3CRET');
      }
    });

    it('a Hub named outside the repository confirms it: --hub, MA2H_HUB_URL, or the same URL in the user file', () => {
      const env = { OH_HAI_TOKEN: 'tok' };
      expect(resolve({ hub: 'https://repo-chosen.example' }, env, loaded({ numbers: {} }, project)).hubUrlSource).toBe('flag');
      expect(resolve({}, { ...env, MA2H_HUB_URL: 'https://repo-chosen.example' }, loaded({ numbers: {} }, project)).hubUrlSource).toBe('env');
      const same = resolve({}, env, loaded({ hubUrl: 'https://repo-chosen.example', numbers: {} }, project));
      expect([same.hubUrl, same.hubUrlSource, same.warnings]).toEqual(['https://repo-chosen.example', 'project', []]);
    });

    it('with no token in the environment the project Hub is used: only a token stored for it (keyed by Hub) can go there', () => {
      const s = resolve({}, { OH_HAI_TOKEN: '', MA2H_AGENT_TOKENS: ' ' }, loaded({ numbers: {} }, project));
      expect([s.hubUrl, s.hubUrlSource]).toEqual(['https://repo-chosen.example', 'project']);
    });
  });

  it('a missing Hub URL is a usage error naming the three fixes', () => {
    const r = requireHubUrl({ hubUrl: null });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.error).toMatchObject({ exit: 2, code: 'no_hub_url' });
    expect(r.error.message).toContain('--hub <url>');
    expect(r.error.message).toContain('MA2H_HUB_URL');
    expect(r.error.message).toContain('oh-hai setup --hub <url>');
    expect(requireHubUrl({ hubUrl: 'https://h.example' })).toEqual({ ok: true, value: 'https://h.example' });
  });
});
