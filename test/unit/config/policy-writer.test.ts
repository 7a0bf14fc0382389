import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'smol-toml';
import { afterEach, describe, expect, it } from 'vitest';
import {
  type DirectoryFetch,
  type DirectoryRow,
  checkExistingPolicy,
  filterDirectory,
  loadConfigFiles,
  userConfigPath,
  writeAllowFromIfAbsent,
} from '../../../src/config/index.js';
import { tempEnv, type TempEnv } from '../../helpers/env.js';

const HUB = 'https://hub.example';
let t: TempEnv;
afterEach(() => t?.cleanup());

const row = (id: string, extra: Partial<DirectoryRow> = {}): DirectoryRow => ({ id, label: null, revoked: false, source: 'account', ...extra });

const writeUser = (text: string) => {
  const file = userConfigPath(t.env);
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, text);
  return file;
};

const run = (fetched: DirectoryFetch | (() => Promise<DirectoryFetch>)) => {
  let calls = 0;
  const promise = writeAllowFromIfAbsent({
    env: t.env,
    hubUrl: HUB,
    by: 'upgrade',
    fetchAgents: async () => {
      calls += 1;
      return typeof fetched === 'function' ? fetched() : fetched;
    },
  });
  return promise.then((r) => {
    if (!r.ok) throw new Error(r.error.message);
    return { result: r.value, calls };
  });
};

describe('the never-widen rule', () => {
  it.each([['allow_from = []'], ['allow_from = ["agent:agt_narrow"]'], ['allow_from = ["any-in-account"]']])(
    'an existing policy (%s) is never touched and the Hub is never asked',
    async (line) => {
      t = tempEnv();
      const text = `# mine\n[bridge]\n${line}\n`;
      const file = writeUser(text);
      const { result, calls } = await run({ kind: 'directory', via: 'human token', rows: [row('agt_new')] });
      expect(calls).toBe(0);
      expect(result.status).toBe('exists');
      expect(readFileSync(file, 'utf8')).toBe(text);
      const lines = result.lines.join('\n');
      expect(lines).toContain(`[bridge] allow_from already exists in ${file}`);
      expect(lines).toContain('never widened, however narrow');
      expect(lines).toContain(`add "agent:<id>" to [bridge] allow_from in ${file}`);
      expect(lines).toContain('clear the key entirely and re-run `oh-hai upgrade`');
      expect(lines).toContain('#1127');
    },
  );

  it('checkExistingPolicy reads only the user file', () => {
    t = tempEnv();
    expect(checkExistingPolicy(t.env)).toEqual({ ok: true, value: { exists: false, path: userConfigPath(t.env) } });
    writeUser('[bridge]\nwait_seconds = 3\n');
    expect(checkExistingPolicy(t.env)).toMatchObject({ ok: true, value: { exists: false } });
    writeUser('[bridge]\nallow_from = []\n');
    const exists = checkExistingPolicy(t.env);
    expect(exists).toMatchObject({ ok: true, value: { exists: true, allowFrom: [] } });
    if (exists.ok && exists.value.exists) expect(exists.value.lines[0]).toContain('(an empty allow_from (every addressed ask/task is refused))');
  });

  it('a user file that does not parse is a usage error before any Hub call', async () => {
    t = tempEnv();
    writeUser('[bridge\n');
    let calls = 0;
    const r = await writeAllowFromIfAbsent({
      env: t.env,
      hubUrl: HUB,
      by: 'upgrade',
      fetchAgents: async () => {
        calls += 1;
        return { kind: 'no-directory' };
      },
    });
    expect(calls).toBe(0);
    expect(r).toMatchObject({ ok: false, error: { exit: 2, code: 'config_syntax' } });
  });
});

describe('writing the policy', () => {
  it('writes every account agent into the user file, keeping what was there, 0600', async () => {
    t = tempEnv();
    const before = '# my hub\n[hub]\nurl = "https://hub.example" # prod\n';
    const file = writeUser(before);
    const { result, calls } = await run({
      kind: 'directory',
      via: 'agent token',
      rows: [row('agt_a', { label: 'builder' }), row('agt_c', { label: 'cfg', source: 'config' })],
    });
    expect(calls).toBe(1);
    expect(result.status).toBe('written');
    const text = readFileSync(file, 'utf8');
    expect(text.startsWith(before)).toBe(true);
    expect(text).toContain('"agent:agt_a", # builder');
    expect(text).toContain('"agent:agt_c", # cfg — source: config');
    expect(parse(text)).toEqual({ hub: { url: 'https://hub.example' }, bridge: { allow_from: ['agent:agt_a', 'agent:agt_c'] } });
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const lines = result.lines.join('\n');
    expect(lines).toContain(`wrote [bridge] allow_from to ${file} — 2 agents from the account directory (read with the agent token)`);
    expect(lines).toContain('agent:agt_c  "cfg"  (source: config');
    expect(lines).toContain('#1127');
    const loaded = loadConfigFiles({ env: t.env, cwd: t.root });
    expect(loaded.ok && loaded.value.user.settings.allowFrom).toEqual(['agent:agt_a', 'agent:agt_c']);
  });

  it('creates the user file when there is none', async () => {
    t = tempEnv();
    const { result } = await run({ kind: 'directory', via: 'human token', rows: [row('agt_a')] });
    expect(result.status).toBe('written');
    expect(parse(readFileSync(userConfigPath(t.env), 'utf8'))).toEqual({ bridge: { allow_from: ['agent:agt_a'] } });
  });

  it('with no directory writes nothing, stays fail-closed and prints login --human as the fix', async () => {
    t = tempEnv();
    const { result } = await run({ kind: 'no-directory' });
    expect(result.status).toBe('not-written');
    const lines = result.lines.join('\n');
    expect(lines).toContain('does not advertise an account agent directory');
    expect(lines).toContain('stays fail-closed');
    expect(lines).toContain(`Fix: oh-hai login --human --hub ${HUB}`);
    expect(() => statSync(userConfigPath(t.env))).toThrow();
  });

  it('passes a failed Hub call through', async () => {
    t = tempEnv();
    const r = await writeAllowFromIfAbsent({
      env: t.env,
      hubUrl: HUB,
      by: 'upgrade',
      fetchAgents: async () => ({ kind: 'failed', error: { code: 'unauthorized', message: 'no', exit: 3 } }),
    });
    expect(r).toEqual({ ok: false, error: { code: 'unauthorized', message: 'no', exit: 3 } });
  });

  it('writes nothing when no agent is admissible', async () => {
    t = tempEnv();
    const { result } = await run({ kind: 'directory', via: 'human token', rows: [row('agt_gone', { revoked: true })] });
    expect(result.status).toBe('not-written');
    expect(result.lines.join('\n')).toContain('lists no agent the bridge could match');
  });

  it('concurrent writers: exactly one writes, the other finds the policy under the lock', async () => {
    t = tempEnv();
    const rows = [row('agt_a')];
    const [a, b] = await Promise.all([
      run({ kind: 'directory', via: 'human token', rows }),
      run({ kind: 'directory', via: 'human token', rows: [row('agt_b')] }),
    ]);
    expect([a.result.status, b.result.status].sort()).toEqual(['exists', 'written']);
    const doc = parse(readFileSync(userConfigPath(t.env), 'utf8')) as { bridge: { allow_from: string[] } };
    expect([['agent:agt_a'], ['agent:agt_b']]).toContainEqual(doc.bridge.allow_from);
  });

  it('quotes an id with one quote kind with the other', async () => {
    t = tempEnv();
    await run({ kind: 'directory', via: 'human token', rows: [row(`agt_o'brien`), row('agt_"q"')] });
    const text = readFileSync(userConfigPath(t.env), 'utf8');
    expect(text).toContain(`"agent:agt_o'brien",`);
    expect(text).toContain(`'agent:agt_"q"',`);
    expect((parse(text) as { bridge: { allow_from: string[] } }).bridge.allow_from).toEqual([`agent:agt_o'brien`, 'agent:agt_"q"']);
  });
});

describe('filterDirectory', () => {
  it.each([
    ['agt_a#b', "it contains '#'"],
    ['agt a', 'it contains whitespace'],
    ['agt\ta', 'control character'],
    ['agt\u00a0a', 'it contains whitespace'],
    ['agt\u0007a', 'it contains a control character'],
    ['agt\u0085a', 'control character'],
    [`agt_'"`, 'it contains both quote kinds (\' and ")'],
    ['x'.repeat(513), "it is 513 bytes, over the Hub's 512-byte bound"],
    ['é'.repeat(257), "it is 514 bytes, over the Hub's 512-byte bound"],
    ['', 'it is empty'],
  ])('drops %j with a line saying why', (id, why) => {
    const { keep, lines } = filterDirectory([row('agt_ok'), row(id, { label: 'lbl' })]);
    expect(keep.map((r) => r.id)).toEqual(['agt_ok']);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(why);
    expect(lines[0]).toContain('so the bridge could never match it');
  });

  it('keeps a 512-byte id, skips revoked agents saying so, and keeps one row per id', () => {
    const long = 'x'.repeat(512);
    const { keep, lines } = filterDirectory([row(long), row('agt_r', { revoked: true, label: 'old' }), row('agt_d'), row('agt_d', { source: 'config' })]);
    expect(keep.map((r) => [r.id, r.source])).toEqual([
      [long, 'account'],
      ['agt_d', 'account'],
    ]);
    expect(lines).toEqual(['skipped agent "agt_r" ("old"): it is revoked at the Hub, so it can send nothing.']);
  });
});
