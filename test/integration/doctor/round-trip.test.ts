import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DOCTOR_EXIT } from '../../../src/core/exit.js';
import { STEP_NAMES } from '../../../src/cli/doctor/report.js';
import { runOhHai } from '../../helpers/cli.js';
import { hubCall, startHub, type FaultRule, type TestHub } from '../../helpers/hub.js';
import { waitFor } from '../../helpers/wait.js';
import { Bench, byName, parseReport, stepStatuses } from './bench.js';

/**
 * The throwaway round trip against a real Hub: it passes end to end and leaves nothing
 * behind, and it fails at each step — by fault injection per request class — naming the
 * step and skipping what follows (but still closing the session it registered).
 */

let hub: TestHub;
const benches: Bench[] = [];

beforeAll(async () => {
  hub = await startHub({ faults: true });
});
afterAll(async () => {
  await hub.dispose();
});
afterEach(async () => {
  await hub.faults([]);
  for (const b of benches.splice(0)) b.cleanup();
});

async function bench(): Promise<Bench> {
  const b = await Bench.create(hub, 'round-trip');
  benches.push(b);
  return b;
}

const human = (method: string, p: string, body?: unknown) => hubCall(hub, method, p, { token: hub.humanToken, ...(body !== undefined ? { body } : {}) });

describe('doctor --self-test: the round trip', () => {
  it('passes every step, timed and named, closes its session and leaves nothing for a bridge to print', async () => {
    const b = await bench();
    const run = await b.doctor(['--self-test']);
    expect(run.code, run.stdout).toBe(DOCTOR_EXIT.ok);
    const t = run.report.self_test!;
    expect(t.steps.map((s) => [s.name, s.status])).toEqual(STEP_NAMES.map((n) => [n, 'pass']));
    for (const s of t.steps) expect(s.ms).toBeGreaterThanOrEqual(0);
    expect(t.client_key).toMatch(/^doctor-self-test-[0-9a-f]{12}$/);
    expect(t.steps.find((s) => s.name === 'ack')!.detail).toMatch(/queued → delivered → acknowledged/);

    const session = await hubCall(hub, 'GET', `/v1/sessions/${t.session}`, { token: b.agent.token });
    expect(session.body.session.state).toBe('closed');
    // Its receipt was acknowledged inside the session: the agent's principal mailbox, which a
    // real bridge would drain, holds nothing from the self-test.
    const principal = await hubCall(hub, 'GET', '/v1/inbox', { token: b.agent.token });
    expect(principal.body.messages).toEqual([]);
  });

  it('prints one line per check and step in text mode, with the timing', async () => {
    const b = await bench();
    const run = await runOhHai(['doctor', '--self-test'], { env: b.env });
    expect(run.code).toBe(0);
    for (const name of ['node', 'config', 'state root', 'policy', 'hub', 'capability', 'clock', 'credential', ...STEP_NAMES, 'bridge']) {
      expect(run.stdout).toMatch(new RegExp(`^(pass|warn) +${name} `, 'm'));
    }
    expect(run.stdout).toMatch(/^pass +register +\d+ ms — registered sess_/m);
    expect(run.stdout).toMatch(/^warn +policy .*\n +fix: /m);
    expect(run.stdout.trimEnd().split('\n').at(-1)).toBe('doctor: pass with warnings — policy');
  });

  it('leaves nothing in `messages list`: the notify it sent itself is hidden there unless --all asks for it', async () => {
    const b = await bench();
    expect((await b.doctor(['--self-test'])).code).toBe(DOCTOR_EXIT.ok);
    for (const flags of [[], ['--received']]) {
      const list = await runOhHai(['messages', 'list', ...flags], { env: b.env });
      expect(list.code, list.stderr).toBe(0);
      expect(list.stdout, flags.join(' ')).not.toContain('oh-hai doctor self-test');
      const all = await runOhHai(['messages', 'list', '--all', ...flags], { env: b.env });
      expect(all.stdout, flags.join(' ')).toMatch(/"oh-hai doctor self-test [0-9a-f]+"/);
    }
  });

  it('counts the principal mail its session claimed in good English: "1 other entry"', async () => {
    const b = await bench();
    const peer = await hub.mintAgent('peer');
    const sent = await hubCall(hub, 'POST', '/v1/messages', {
      token: peer.token,
      body: { to: `agent:${b.agent.id}`, intent: 'notify', text: 'for whoever reads the principal mailbox' },
    });
    expect(sent.status).toBe(202);
    const run = await runOhHai(['doctor', '--self-test'], { env: b.env });
    expect(run.stdout).toMatch(/^pass +drain +.*; 1 other entry came with it \(/m);
  });

  it('messaging_disabled is reported as the setting a human must switch on', async () => {
    const b = await bench();
    await human('PATCH', '/v1/account', { agent_messaging: false });
    try {
      const run = await b.doctor(['--self-test']);
      expect(run.code).toBe(DOCTOR_EXIT.failed);
      const register = run.report.self_test!.steps[0]!;
      expect(register).toMatchObject({ name: 'register', status: 'fail' });
      expect(register.detail).toMatch(/messaging_disabled.*agent messaging is switched off/);
      expect(register.fix).toMatch(/Settings → Agent messaging/);
      expect(stepStatuses(run.report)).toMatchObject({ send: 'skip', drain: 'skip', close: 'skip' });
      expect(run.stderr).toMatch(/failing: self-test register/);
    } finally {
      await human('PATCH', '/v1/account', { agent_messaging: true });
    }
  });

  const faults: { step: (typeof STEP_NAMES)[number]; rules: FaultRule[]; detail: RegExp; closes: boolean }[] = [
    { step: 'register', rules: [{ class: 'sessions', action: 'status', status: 503, count: 1 }], detail: /503/, closes: false },
    { step: 'send', rules: [{ class: 'messages', action: 'status', status: 503, count: 1 }], detail: /503/, closes: true },
    { step: 'drain', rules: [{ class: 'drain', action: 'status', status: 500, count: 1 }], detail: /500/, closes: true },
    {
      step: 'verify',
      rules: [{ class: 'drain', action: 'tamper', tamper: 'wrong_session', count: 1 }],
      detail: /failed verification \(addressing\)/,
      closes: true,
    },
    {
      step: 'verify',
      rules: [{ class: 'drain', action: 'tamper', tamper: 'signature_syntax', count: 1 }],
      detail: /failed verification \(signature_syntax\)/,
      closes: true,
    },
    { step: 'ack', rules: [{ class: 'ack', action: 'status', status: 503, count: 1 }], detail: /503/, closes: true },
    { step: 'ack', rules: [{ class: 'ack', action: 'drop', count: 1 }], detail: /did not complete/, closes: true },
  ];

  it.each(faults)('fails at $step ($rules.0.class $rules.0.action), naming it and skipping the rest', async ({ step, rules, detail, closes }) => {
    const b = await bench();
    await hub.faults(rules);
    const run = await b.doctor(['--self-test']);
    expect(run.code).toBe(DOCTOR_EXIT.failed);
    const steps = run.report.self_test!.steps;
    const at = steps.findIndex((s) => s.name === step);
    expect(steps[at]).toMatchObject({ status: 'fail', detail: expect.stringMatching(detail), fix: expect.any(String) });
    expect(steps.slice(0, at).every((s) => s.status === 'pass')).toBe(true);
    expect(steps.slice(at + 1, -1).every((s) => s.status === 'skip')).toBe(true);
    expect(steps.at(-1)!.status).toBe(closes ? 'pass' : 'skip');
    expect(run.report.self_test!.failed).toEqual([step]);
    // The setup checks are unaffected: the failure is the step's alone.
    expect(byName(run.report).hub!.status).toBe('pass');
    // What the failed step left was acknowledged before the close: no bounce receipt reaches
    // the agent's principal mailbox, where its real bridge would print it.
    await hub.faults([]);
    expect((await hubCall(hub, 'GET', '/v1/inbox', { token: b.agent.token })).body.messages).toEqual([]);
  });

  it('fails at close, after every other step passed', async () => {
    const b = await bench();
    // Hold the ack long enough to swap in a sessions fault once registration is done.
    await hub.faults([{ class: 'ack', action: 'delay', delay_ms: 4000 }]);
    const running = runOhHai(['doctor', '--self-test', '--json'], { env: { ...b.env, OH_HAI_DOCTOR_TIMEOUT_SECONDS: '30' } });
    await waitFor(
      async () => {
        const fleet = await human('GET', '/v1/fleet');
        return (fleet.body?.sessions as { agent_id: string }[] | undefined)?.some((s) => s.agent_id === b.agent.id);
      },
      { what: 'the throwaway session to register' },
    );
    await hub.faults([{ class: 'sessions', action: 'status', status: 503 }]);
    const run = await running;
    const report = parseReport(run);
    expect(run.code).toBe(DOCTOR_EXIT.failed);
    expect(stepStatuses(report)).toEqual({ register: 'pass', send: 'pass', drain: 'pass', verify: 'pass', ack: 'pass', reachability: 'pass', close: 'fail' });
    expect(report.self_test!.steps.at(-1)!.fix).toMatch(/lapses on its own/);
  });
});

describe('doctor --self-test: reachability', () => {
  let quick: TestHub;
  beforeAll(async () => {
    // A presence window far shorter than the delayed acks between the last drain and the fleet call.
    quick = await startHub({ faults: true, args: ['--presence-seconds', '0.05'] });
  });
  afterAll(async () => {
    await quick.dispose();
  });

  it('fails when the fleet does not show the session online', async () => {
    const b = await Bench.create(quick, 'presence');
    benches.push(b);
    await quick.faults([{ class: 'ack', action: 'delay', delay_ms: 300 }]);
    const run = await b.doctor(['--self-test']);
    expect(run.code).toBe(DOCTOR_EXIT.failed);
    expect(stepStatuses(run.report)).toMatchObject({ ack: 'pass', reachability: 'fail', close: 'pass' });
    expect(run.report.self_test!.steps.find((s) => s.name === 'reachability')!.detail).toMatch(/as offline right after a drain/);
  });
});
