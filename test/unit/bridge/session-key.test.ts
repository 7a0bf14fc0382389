import { describe, expect, it } from 'vitest';
import { findHostProgram, isPassThrough, type ProcessInspector } from '../../../src/cli/resolve/host-program.js';
import { resolveAgentSessionKey } from '../../../src/cli/resolve/session-key.js';

/** A fake process table: pid → [ppid, command, start time]. */
function table(rows: Record<number, [number, string, string | null]>): ProcessInspector {
  return {
    parentPid: (pid) => rows[pid]?.[0] ?? null,
    command: (pid) => rows[pid]?.[1] ?? null,
    startTime: (pid) => rows[pid]?.[2] ?? null,
  };
}

// oh-hai (500) ← sh -c (400) ← bash (300) ← claude (200) ← systemd --user (100) ← init
const harness = table({
  500: [400, 'node', '5000'],
  400: [300, 'sh', '4000'],
  300: [200, '-bash', '3000'],
  200: [100, 'claude', '2000'],
  100: [1, 'systemd', '1000'],
});

const input = (over: Partial<Parameters<typeof resolveAgentSessionKey>[0]> = {}) => ({
  flag: undefined,
  env: {},
  host: 'host-a',
  selfPid: 500,
  inspect: harness,
  ...over,
});

describe('agent-session key precedence', () => {
  it('--session beats every variable', () => {
    const k = resolveAgentSessionKey(input({ flag: 'builder-1', env: { MA2H_SESSION_ID: 'x', MA2H_AGENT_SESSION_ID: 'y' } }));
    expect(k).toEqual({ ok: true, value: expect.objectContaining({ key: 'builder-1', source: '--session', name: 'builder-1', pinned: null, declared: true }) });
  });
  it('MA2H_SESSION_ID > MA2H_AGENT_SESSION_ID > CLAUDE_CODE_SESSION_ID > host program', () => {
    const all = { MA2H_SESSION_ID: 'a', MA2H_AGENT_SESSION_ID: 'b', CLAUDE_CODE_SESSION_ID: 'c' };
    const src = (env: NodeJS.ProcessEnv) => {
      const r = resolveAgentSessionKey(input({ env }));
      return r.ok ? [r.value.source, r.value.key] : r.reason;
    };
    expect(src(all)).toEqual(['MA2H_SESSION_ID', 'a']);
    expect(src({ ...all, MA2H_SESSION_ID: '' })).toEqual(['MA2H_AGENT_SESSION_ID', 'b']);
    expect(src({ CLAUDE_CODE_SESSION_ID: 'c' })).toEqual(['CLAUDE_CODE_SESSION_ID', 'c']);
    expect(src({})).toEqual(['host program', 'host:host-a:200:2000']);
  });
  it('a sess_… value from --session or MA2H_SESSION_ID pins; from a harness variable it is a name', () => {
    const pinFlag = resolveAgentSessionKey(input({ flag: 'sess_abc' }));
    expect(pinFlag.ok && pinFlag.value).toMatchObject({ pinned: 'sess_abc', name: null });
    const pinEnv = resolveAgentSessionKey(input({ env: { MA2H_SESSION_ID: 'sess_abc' } }));
    expect(pinEnv.ok && pinEnv.value).toMatchObject({ pinned: 'sess_abc', name: null });
    const named = resolveAgentSessionKey(input({ env: { MA2H_AGENT_SESSION_ID: 'sess_abc' } }));
    expect(named.ok && named.value).toMatchObject({ pinned: null, name: 'sess_abc' });
  });
  it('a harness value that is not a valid Hub name is registered under a stable digest name, keyed on the exact value', () => {
    const v = 'weird value / with spaces';
    const a = resolveAgentSessionKey(input({ env: { MA2H_AGENT_SESSION_ID: v } }));
    const b = resolveAgentSessionKey(input({ env: { MA2H_AGENT_SESSION_ID: v } }));
    expect(a.ok && a.value.key).toBe(v);
    expect(a.ok && a.value.name).toMatch(/^agent-[0-9a-f]{16}$/);
    expect(a.ok && b.ok && a.value.name === b.value.name).toBe(true);
  });
  it('refuses a --session that is neither an id nor a name, saying what a name is', () => {
    const r = resolveAgentSessionKey(input({ flag: 'has space' }));
    expect(r.ok).toBe(false);
    expect(!r.ok && r.reason).toMatch(/--session "has space" must be 1–64 characters/);
  });
  it('the host-program key is declared false and named per host program', () => {
    const r = resolveAgentSessionKey(input());
    expect(r.ok && r.value).toMatchObject({ declared: false, describe: 'claude pid 200' });
    expect(r.ok && r.value.name).toMatch(/^claude-[0-9a-f]{12}$/);
  });
  it('cannot determine the session: says so and names both fixes', () => {
    const r = resolveAgentSessionKey(input({ inspect: table({ 500: [400, 'node', '1'], 400: [1, 'bash', '1'] }) }));
    expect(r.ok).toBe(false);
    expect(!r.ok && r.reason).toMatch(/could not determine this agent session.*reached init.*--session <name>.*MA2H_AGENT_SESSION_ID/);
  });
});

describe('host-program walk', () => {
  it('walks past shells and wrappers to the first long-lived ancestor', () => {
    const t = table({
      9: [8, 'node', '1'],
      8: [7, 'timeout', '1'],
      7: [6, 'nohup', '1'],
      6: [5, 'npm exec oh-hai', '1'],
      5: [4, '/usr/bin/env', '1'],
      4: [3, 'python3', '42'],
    });
    expect(findHostProgram(9, t)).toEqual({ ok: true, value: { pid: 4, startTime: '42', command: 'python3' } });
  });
  it('identifies the host by pid AND start time: no start time, no key', () => {
    const r = findHostProgram(9, table({ 9: [4, 'node', '1'], 4: [1, 'claude', null] }));
    expect(!r.ok && r.reason).toMatch(/start time of claude pid 4/);
  });
  it('an unreadable parent is a failure, not a guess', () => {
    expect(findHostProgram(9, table({ 9: [4, 'node', '1'] })).ok).toBe(false);
  });
  it('knows shells, login shells and npm titles', () => {
    for (const c of ['bash', '-zsh', '/bin/sh', 'dash', 'npm exec oh-hai', 'npx', 'env', 'cmd.exe']) expect(isPassThrough(c)).toBe(true);
    for (const c of ['node', 'claude', 'python3', 'codex', 'tmux: server']) expect(isPassThrough(c)).toBe(false);
  });
});
