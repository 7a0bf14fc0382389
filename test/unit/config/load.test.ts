import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { findProjectConfig, loadConfigFiles, userConfigPath } from '../../../src/config/index.js';
import { tempEnv, type TempEnv } from '../../helpers/env.js';

let t: TempEnv;
afterEach(() => t?.cleanup());

const write = (file: string, text: string) => {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, text);
};

const setup = () => {
  t = tempEnv();
  const repo = path.join(t.root, 'repo');
  const deep = path.join(repo, 'a', 'b');
  mkdirSync(deep, { recursive: true });
  return { user: userConfigPath(t.env), repo, deep, project: path.join(repo, '.oh-hai', 'config.toml') };
};

const load = (cwd: string) => loadConfigFiles({ env: t.env, cwd });

describe('loadConfigFiles', () => {
  it('with no files, reports the user path as not found and no project', () => {
    const { deep, user } = setup();
    const r = load(deep);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.value.files).toEqual([{ path: user, found: false }]);
    expect(r.value.project).toBeNull();
    expect(r.value.warnings).toEqual([]);
  });

  it('reads the user file under XDG_CONFIG_HOME and the nearest project file from the cwd upwards', () => {
    const { deep, user, project } = setup();
    write(user, '[hub]\nurl = "https://user.example"\n[bridge]\nallow_from = ["agent:agt_a"]\nwait_seconds = 1.5\ntransport = "poll"\n');
    write(project, '[hub]\nurl = "https://project.example/"\n');
    expect(user.startsWith(t.env.XDG_CONFIG_HOME!)).toBe(true);
    const r = load(deep);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.value.user.settings).toEqual({ hubUrl: 'https://user.example', allowFrom: ['agent:agt_a'], transport: 'poll', numbers: { waitSeconds: 1.5 } });
    expect(r.value.project?.settings).toEqual({ hubUrl: 'https://project.example', numbers: {} });
    expect(r.value.files).toEqual([
      { path: user, found: true },
      { path: project, found: true },
    ]);
  });

  it('falls back to ~/.config when XDG_CONFIG_HOME is unset', () => {
    setup();
    const env = { ...t.env, XDG_CONFIG_HOME: undefined };
    expect(userConfigPath(env)).toBe(path.join(t.env.HOME!, '.config', 'oh-hai', 'config.toml'));
  });

  it('stops at the filesystem root when no project file exists', () => {
    const { deep } = setup();
    expect(findProjectConfig(deep, t.env)).toBeNull();
    expect(findProjectConfig('/', t.env)).toBeNull();
  });

  it('does not read the user config as a project file when .oh-hai is a link to it', () => {
    const { deep, repo, user } = setup();
    write(user, '[bridge]\nallow_from = ["agent:agt_a"]\n');
    symlinkSync(path.dirname(user), path.join(repo, '.oh-hai'));
    expect(findProjectConfig(deep, t.env)).toBeNull();
    expect(load(deep).ok).toBe(true);
  });

  it.each([['[bridge]\nwait_seconds = 5\n'], ['[bridge]\n'], ['bridge.allow_from = ["any-in-account"]\n'], ['bridge = { transport = "sse" }\n']])(
    'refuses a project file that sets [bridge] at all (%j), naming the file and why',
    (text) => {
      const { deep, project } = setup();
      write(project, text);
      const r = load(deep);
      expect(r.ok).toBe(false);
      if (r.ok) return;
      expect(r.error.exit).toBe(2);
      expect(r.error.code).toBe('project_sets_bridge');
      expect(r.error.message).toContain(project);
      expect(r.error.message).toContain('a repository must not widen who may ask your agent');
    },
  );

  it('warns on unknown keys in either file and keeps going', () => {
    const { deep, user, project } = setup();
    write(user, 'colour = "blue"\n[hub]\nurl = "https://h.example"\nport = 1\n[bridge]\nallow_form = ["agent:a"]\n');
    write(project, '[extras]\nx = 1\n');
    const r = load(deep);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.value.warnings).toEqual([
      `${user}: unknown key colour (ignored; known tables: [hub], [bridge])`,
      `${user}: unknown key [hub] port (ignored; the known key is url)`,
      `${user}: unknown key [bridge] allow_form (ignored; known keys: allow_from, transport, wait_seconds, unattended_max_seconds, interval_seconds, max_retries, retain_printed)`,
      `${project}: unknown table [extras] (ignored, with every key in it; known tables: [hub], [bridge])`,
    ]);
  });

  it.each([
    ['[hub]\nurl = 5\n', '[hub] url must be a string (the Hub origin, e.g. "https://hub.example.com"), got 5'],
    ['hub = "x"\n', '[hub] must be a table'],
    ['bridge = 1\n', '[bridge] must be a table'],
    [
      '[bridge]\nallow_from = "agent:a"\n',
      '[bridge] allow_from must be a list of strings, e.g. ["agent:agt_123"] or ["any-in-account"], got the string "agent:a"',
    ],
    ['[bridge]\nallow_from = ["agent:a", 3]\n', '[bridge] allow_from must be a list of strings'],
    ['[bridge]\nwait_seconds = "10"\n', '[bridge] wait_seconds must be a number of seconds (fractions allowed), got the string "10"'],
    ['[bridge]\nmax_retries = 2.5\n', '[bridge] max_retries must be a whole number, got 2.5'],
    ['[bridge]\ninterval_seconds = inf\n', '[bridge] interval_seconds must be a number of seconds'],
    ['[bridge]\ninterval_seconds = 0\n', '[bridge] interval_seconds is 0: it must be greater than 0'],
    ['[bridge]\nwait_seconds = -1\n', '[bridge] wait_seconds is -1: it cannot be negative'],
    ['[bridge]\ntransport = "websocket"\n', '[bridge] transport must be one of auto, sse, poll, got the string "websocket"'],
    ['[bridge]\nallow_from = ["agent:a b"]\n', '[bridge] allow_from: agent id in item "agent:a b" "a b" contains U+0020'],
    ['[hub]\nurl = "https://h.example/api"\n', '[hub] url: "https://h.example/api" has a path'],
  ])('a wrong type or value in the user file is a usage error naming file, key and expectation: %j', (text, message) => {
    const { deep, user } = setup();
    write(user, text);
    const r = load(deep);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.error.exit).toBe(2);
    expect(r.error.message).toContain(`${user}: ${message}`);
  });

  it.each([[0], [-5], [-0.5]])('unattended_max_seconds = %d is a usage error: it never disabled the bound', (n) => {
    const { deep, user } = setup();
    write(user, `[bridge]\nunattended_max_seconds = ${n}\n`);
    const r = load(deep);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error.message).toContain('0 or less never disabled the unattended bound');
  });

  it('a TOML syntax error names the file and the line', () => {
    const { deep, project } = setup();
    write(project, '[hub]\nurl = "https://h.example"\nurl2 = \n');
    const r = load(deep);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.error.code).toBe('config_syntax');
    expect(r.error.exit).toBe(2);
    expect(r.error.message).toMatch(new RegExp(`^${project.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}, line 3, column \\d+: invalid TOML`));
  });
});
