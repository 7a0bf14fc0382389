import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DOCTOR_EXIT, DOCTOR_EXIT_TABLE, EXIT } from '../../../src/core/exit.js';
import { runOhHai } from '../../helpers/cli.js';
import { tempEnv, type TempEnv } from '../../helpers/env.js';
import { hubCall, startHub, type TestHub } from '../../helpers/hub.js';
import { Bench, byName, parseReport, stepStatuses } from './bench.js';

/** The setup checks through the real CLI: flags, exit codes, and each failing input naming its fix. */

const temps: TempEnv[] = [];
const benches: Bench[] = [];
afterEach(() => {
  for (const t of temps.splice(0)) t.cleanup();
  for (const b of benches.splice(0)) b.cleanup();
});

function env(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const t = tempEnv(extra);
  temps.push(t);
  return t.env;
}

describe('oh-hai doctor: flags and exit codes', () => {
  it('--help documents the exit codes from the one table', async () => {
    const run = await runOhHai(['doctor', '--help'], { env: env() });
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('Exit codes:');
    for (const row of DOCTOR_EXIT_TABLE) expect(run.stdout).toContain(`${row.code}\t${row.meaning}`);
    expect(run.stdout).toMatch(/--self-test/);
  });

  it('--session without --self-test, and a relative --state-home, are usage errors (exit 2)', async () => {
    const a = await runOhHai(['doctor', '--session', 'x'], { env: env() });
    expect(a.code).toBe(EXIT.usage);
    expect(a.stderr).toMatch(/--session names the bridge that --self-test inspects/);
    const b = await runOhHai(['doctor', '--state-home', 'relative/dir'], { env: env() });
    expect(b.code).toBe(EXIT.usage);
    expect(b.stderr).toMatch(/--state-home must be an absolute path/);
  });

  it('no Hub URL fails the hub check with the fix and skips what needs a Hub (text mode)', async () => {
    const run = await runOhHai(['doctor'], { env: env() });
    expect(run.code).toBe(DOCTOR_EXIT.failed);
    expect(run.stdout).toMatch(/^fail +hub +no Hub URL is configured\n +fix: pass --hub <url>, export MA2H_HUB_URL=<url>/m);
    expect(run.stdout).toMatch(/^skip +credential +not checked: no Hub URL/m);
    expect(run.stdout).toMatch(/^pass +node /m);
    expect(run.stderr).toMatch(/^oh-hai doctor: failing: hub$/m);
  });

  it('a broken user config fails the config check, naming the file, and the rest that needs it is skipped', async () => {
    const e = env();
    const file = path.join(e.XDG_CONFIG_HOME!, 'oh-hai', 'config.toml');
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, '[bridge]\nunattended_max_seconds = "soon"\n');
    const run = await runOhHai(['doctor', '--self-test', '--json'], { env: e });
    const report = parseReport(run);
    expect(run.code).toBe(DOCTOR_EXIT.failed);
    expect(byName(report).config).toMatchObject({ status: 'fail', detail: expect.stringContaining(file) });
    expect(byName(report).hub!.status).toBe('skip');
    expect(Object.values(stepStatuses(report)).every((s) => s === 'skip')).toBe(true);
  });

  it('a state root open to other users fails', async () => {
    const e = env({ MA2H_HUB_URL: 'http://127.0.0.1:9' });
    const entry = path.join(e.XDG_STATE_HOME!, 'oh-hai', 'bridge', 'sessions', 'f'.repeat(32));
    mkdirSync(entry, { recursive: true, mode: 0o755 });
    const run = await runOhHai(['doctor', '--json'], { env: e });
    expect(byName(parseReport(run))['state root']).toMatchObject({ status: 'fail', fix: expect.stringContaining('chmod -R go-rwx') });
  });
});

describe('oh-hai doctor: the Hub and the credential', () => {
  let hub: TestHub;
  beforeAll(async () => {
    hub = await startHub();
  });
  afterAll(async () => {
    await hub.dispose();
  });

  it('an unreachable Hub fails hub; the credential is left unverified and the round trip is skipped', async () => {
    const b = await Bench.create(hub, 'unreachable', { MA2H_HUB_URL: 'http://127.0.0.1:9', OH_HAI_DOCTOR_TIMEOUT_SECONDS: '5' });
    benches.push(b);
    const run = await b.doctor(['--self-test']);
    expect(run.code).toBe(DOCTOR_EXIT.failed);
    const c = byName(run.report);
    expect(c.hub).toMatchObject({ status: 'fail', detail: expect.stringMatching(/cannot reach http:\/\/127\.0\.0\.1:9/) });
    expect(c.capability!.status).toBe('skip');
    expect(c.credential).toMatchObject({ status: 'warn', detail: expect.stringMatching(/resolves from MA2H_AGENT_TOKENS .*not verified/) });
    expect(Object.values(stepStatuses(run.report)).every((s) => s === 'skip')).toBe(true);
  });

  it('a revoked credential fails the credential check, and never prints the token', async () => {
    const b = await Bench.create(hub, 'revoked');
    benches.push(b);
    const revoked = await hubCall(hub, 'POST', `/v1/account/agents/${b.agent.id}/revoke`, { token: hub.humanToken, body: {} });
    expect(revoked.status).toBeLessThan(300);
    const run = await b.doctor(['--self-test']);
    expect(run.code).toBe(DOCTOR_EXIT.failed);
    expect(byName(run.report).credential).toMatchObject({ status: 'fail', detail: expect.stringMatching(/the Hub refused it \(401/) });
    expect(run.report.self_test!.steps.every((s) => s.status === 'skip')).toBe(true);
    expect(run.stdout + run.stderr).not.toContain(b.agent.token);
  });

  it('a bare OH_HAI_TOKEN: doctor learns the agent id from the Hub and names the source', async () => {
    const b = await Bench.create(hub, 'bare-token');
    benches.push(b);
    const run = await b.doctor([], { MA2H_AGENT_TOKENS: '', OH_HAI_TOKEN: b.agent.token });
    expect(byName(run.report).credential).toMatchObject({
      status: 'pass',
      detail: expect.stringContaining(`OH_HAI_TOKEN environment variable; the Hub accepts it as agent ${b.agent.id}`),
    });
    expect(run.stdout).not.toContain(b.agent.token);
  });
});

describe('oh-hai doctor: the clock against the Hub', () => {
  it('warns past a few seconds, saying which way and by how much', async () => {
    const hub = await startHub({ args: ['--clock-offset-ms', '8000'] });
    try {
      const b = await Bench.create(hub, 'clock-ahead');
      benches.push(b);
      const run = await b.doctor([]);
      expect(run.code).toBe(DOCTOR_EXIT.ok);
      const clock = byName(run.report).clock!;
      expect(clock.status).toBe('warn');
      expect(clock.detail).toMatch(/the Hub's clock is [78]\.\d s ahead of this machine's/);
      expect(Math.abs((clock.measured!.offset_ms as number) - 8000)).toBeLessThan(1000);
    } finally {
      await hub.dispose();
    }
  });

  it("fails past the replay window, and the round trip's verify names the stale t as a clock disagreement", async () => {
    const hub = await startHub({ args: ['--clock-offset-ms', '-200000'] });
    try {
      const b = await Bench.create(hub, 'clock-behind');
      benches.push(b);
      const run = await b.doctor(['--self-test']);
      expect(run.code).toBe(DOCTOR_EXIT.failed);
      const clock = byName(run.report).clock!;
      expect(clock).toMatchObject({ status: 'fail', fix: expect.stringMatching(/NTP/) });
      expect(clock.detail).toMatch(/199\.\d s behind|200\.\d s behind/);
      expect(clock.detail).toMatch(/more than the 120 s replay window/);
      const verify = run.report.self_test!.steps.find((s) => s.name === 'verify')!;
      expect(verify.status).toBe('fail');
      expect(verify.detail).toMatch(/replay_window.*the two clocks disagree/);
      expect(run.report.self_test!.failed).toEqual(['verify']);
    } finally {
      await hub.dispose();
    }
  });
});
