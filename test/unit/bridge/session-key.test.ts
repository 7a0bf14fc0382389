import { describe, expect, it } from 'vitest';
import { findHostProgram, isPassThrough, type ProcessInspector } from '../../../src/cli/resolve/host-program.js';
import { pinCandidate, resolveAgentSessionKey } from '../../../src/cli/resolve/session-key.js';

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
  it('an MA2H id outside the name grammar from --session or MA2H_SESSION_ID can only be an id: it pins', () => {
    for (const id of ['S~3.oPoHoApJxe~L', '7/é?s&abc%', 'x'.repeat(65)]) {
      const flag = resolveAgentSessionKey(input({ flag: id }));
      expect(flag.ok && flag.value).toMatchObject({ key: id, pinned: id, name: null });
      const env = resolveAgentSessionKey(input({ env: { MA2H_SESSION_ID: id } }));
      expect(env.ok && env.value).toMatchObject({ key: id, pinned: id, name: null });
    }
  });
  it("from a harness variable such a value keeps today's rule: a digest name, never a pin", () => {
    const r = resolveAgentSessionKey(input({ env: { MA2H_AGENT_SESSION_ID: 'S~3.oPoHoApJxe~L' } }));
    expect(r.ok && r.value).toMatchObject({ pinned: null, name: expect.stringMatching(/^agent-[0-9a-f]{16}$/) });
  });
  it('a name from --session or MA2H_SESSION_ID is a pin candidate the connection asks the Hub about; from anywhere else it is not', () => {
    const candidate = (over: Parameters<typeof input>[0]) => {
      const r = resolveAgentSessionKey(input(over));
      return r.ok ? pinCandidate(r.value) : r.reason;
    };
    expect(candidate({ flag: 'run.rivr4t6jdz' })).toBe('run.rivr4t6jdz');
    expect(candidate({ env: { MA2H_SESSION_ID: 'run.rivr4t6jdz' } })).toBe('run.rivr4t6jdz');
    expect(candidate({ flag: 'sess_abc' })).toBeNull();
    expect(candidate({ flag: 'S~3.x~L' })).toBeNull();
    expect(candidate({ env: { MA2H_AGENT_SESSION_ID: 'run.rivr4t6jdz' } })).toBeNull();
    expect(candidate({ env: { CLAUDE_CODE_SESSION_ID: 'run.rivr4t6jdz' } })).toBeNull();
    expect(candidate({})).toBeNull();
    const named = resolveAgentSessionKey(input({ flag: 'run.rivr4t6jdz' }));
    expect(named.ok && named.value).toMatchObject({ pinned: null, name: 'run.rivr4t6jdz' });
  });
  it('refuses a MA2H_SESSION_ID that is neither an id nor a name, saying what each is', () => {
    const r = resolveAgentSessionKey(input({ env: { MA2H_SESSION_ID: 'has#hash' } }));
    expect(!r.ok && r.reason).toMatch(/MA2H_SESSION_ID="has#hash" is neither a Hub session id \(at most 128 bytes, no '#'.*nor a session name/);
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
    expect(!r.ok && r.reason).toMatch(
      /--session "has space" must be 1–64 characters.*nor is it a Hub session id \(--session "has space" contains U\+0020.*Pass a session name, or the id of a session of this agent/,
    );
    const long = resolveAgentSessionKey(input({ flag: 'x'.repeat(129) }));
    expect(!long.ok && long.reason).toMatch(/129 bytes; the limit is 128/);
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
