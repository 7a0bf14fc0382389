import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DOCTOR_EXIT } from '../../../src/core/exit.js';
import { isSameProcessAlive, writeCursor, SpoolReader, type ProcessStamp } from '../../../src/spool/index.js';
import { runOhHai } from '../../helpers/cli.js';
import { hubCall, startHub, type TestHub } from '../../helpers/hub.js';
import { waitFor } from '../../helpers/wait.js';
import { Bench, byName, parseReport, snapshot } from './bench.js';

/**
 * The four bridge checks of `doctor --self-test`, each in each state, against a real Hub and
 * a state entry staged the way the consumer and the reader write it. Every run is the real
 * CLI; every run also does the throwaway round trip, which must pass alongside.
 */

let hub: TestHub;
const benches: Bench[] = [];

beforeAll(async () => {
  hub = await startHub({ args: ['--lease-min-seconds', '1'] });
});
afterAll(async () => {
  await hub.dispose();
});
afterEach(() => {
  for (const b of benches.splice(0)) b.cleanup();
});

async function bench(name: string): Promise<Bench> {
  const b = await Bench.create(hub, name);
  benches.push(b);
  return b;
}

/** A healthy staged bridge: an active session, a live connection, an attending reader, everything read. */
async function healthy(b: Bench): Promise<{ session: string; consumer: ProcessStamp; reader: ProcessStamp }> {
  const session = await b.session();
  b.settings();
  const consumer = b.standIn();
  b.consumer(consumer);
  const reader = b.standIn();
  b.reader(reader);
  b.spool(['already read'], session);
  const [item] = new SpoolReader(b.dir).readAfter(0);
  writeCursor(b.dir, { seq: item!.record.seq, offset: item!.end });
  return { session, consumer, reader };
}

describe('doctor --self-test: this bridge', () => {
  it('no bridge for this agent session passes and says so', async () => {
    const b = await bench('nobody-here');
    const run = await b.doctor(['--self-test']);
    expect(run.code).toBe(DOCTOR_EXIT.ok);
    const c = byName(run.report);
    expect(c.bridge).toMatchObject({ status: 'pass', detail: expect.stringContaining('no bridge for this agent session') });
    expect(c['bridge consumer']).toBeUndefined();
    expect(run.report.self_test?.status).toBe('pass');
  });

  it('a healthy bridge passes all four, and doctor leaves every byte and mtime of the entry as it found them', async () => {
    const b = await bench('healthy');
    const { consumer, reader } = await healthy(b);
    const before = snapshot(b.dir);
    const run = await b.doctor(['--self-test']);
    const after = snapshot(b.dir);

    expect(run.code, run.stdout).toBe(DOCTOR_EXIT.ok);
    const c = byName(run.report);
    for (const name of ['bridge consumer', 'bridge session', 'bridge reader', 'bridge unread'])
      expect(c[name]?.status, `${name}: ${c[name]?.detail}`).toBe('pass');
    expect(c['bridge reader']!.detail).toMatch(/a reader attends/);
    expect(c['bridge unread']!.detail).toMatch(/nothing unread \(the cursor is at seq 1 of 1\)/);
    expect(run.report.self_test).toMatchObject({ status: 'pass', failed: [] });

    expect([...after.keys()]).toEqual([...before.keys()]);
    for (const [name, was] of before) expect(after.get(name), name).toEqual(was);
    // Nothing was signalled either.
    expect(isSameProcessAlive(consumer)).toBe('alive');
    expect(isSameProcessAlive(reader)).toBe('alive');
  });

  it('a dead connection fails bridge consumer, which fails the self-test and names the check (exit 20)', async () => {
    const b = await bench('dead-consumer');
    await healthy(b);
    b.consumer(await b.deadStamp());
    const run = await b.doctor(['--self-test']);
    expect(run.code).toBe(DOCTOR_EXIT.failed);
    expect(byName(run.report)['bridge consumer']).toMatchObject({
      status: 'fail',
      detail: expect.stringMatching(/no longer exists: the connection died without recording why/),
    });
    expect(run.report.status).toBe('fail');
    expect(run.report.self_test).toMatchObject({ status: 'fail', failed: ['bridge consumer'] });
    expect(run.stderr).toMatch(/^oh-hai doctor: failing: bridge consumer$/m);
  });

  it('a stopped connection fails with its stop reason and exit code', async () => {
    const b = await bench('stopped-consumer');
    await healthy(b);
    b.consumer(await b.deadStamp(), {
      state: 'stopped',
      exit_code: 3,
      stop_reason: 'unauthorized',
      stop_message: 'the Hub refused the credential (401)',
      stopped_at: Date.now(),
    });
    const c = byName((await b.doctor(['--self-test'])).report)['bridge consumer']!;
    expect(c.status).toBe('fail');
    expect(c.detail).toMatch(/exit 3 \(unauthorized\): the Hub refused the credential/);
    expect(c.fix).toMatch(/a human must fix it/);
  });

  it('an entry with no connection record fails bridge consumer', async () => {
    const b = await bench('no-consumer');
    await b.session();
    b.settings();
    const run = await b.doctor(['--self-test']);
    expect(run.code).toBe(DOCTOR_EXIT.failed);
    expect(byName(run.report)['bridge consumer']).toMatchObject({ status: 'fail', detail: expect.stringMatching(/no connection has run/) });
  });

  it('garbage records are unknowns — warns, never fails: the reader interval becomes an upper bound and says so', async () => {
    const b = await bench('garbage');
    const session = await b.session();
    b.settings();
    writeFileSync(path.join(b.dir, 'consumer.json'), '{"pid": 12, "state": "runn', { mode: 0o600 });
    // A reader that stopped beating two minutes ago: not attending, so the interval is measured.
    b.reader(b.standIn(), { heartbeat_at: Date.now() - 120_000 });
    b.spool(['fresh'], session);
    const run = await b.doctor(['--self-test']);
    const c = byName(run.report);
    expect(c['bridge consumer']).toMatchObject({ status: 'warn', detail: expect.stringMatching(/could not be read .*unknown/) });
    expect(c['bridge reader']).toMatchObject({ status: 'warn', measured: expect.objectContaining({ upper_bound: true }) });
    expect(c['bridge reader']!.detail).toMatch(/at most 2m \d\ds — an upper bound, not a measurement/);
    expect(c['bridge session']!.status).toBe('pass');
    expect(run.report.status).toBe('warn');
    expect(run.code).toBe(DOCTOR_EXIT.ok);

    writeFileSync(path.join(b.dir, 'session.json'), '\u0000\u0001 not json');
    writeFileSync(path.join(b.dir, 'cursor.json'), '{"seq": "x"}');
    const again = byName((await b.doctor(['--self-test'])).report);
    expect(again['bridge session']!.status).toBe('warn');
    expect(again['bridge unread']).toMatchObject({ status: 'warn', detail: expect.stringMatching(/cursor could not be read/) });
  });

  it('a reader past the deadline it declared, with the connection past the unattended bound, fails bridge reader', async () => {
    const b = await bench('reader-past-deadline');
    await healthy(b);
    b.settings({ unattended_max_seconds: 2 });
    const now = Date.now();
    b.consumer(b.standIn(), { started_at: now - 10_000 });
    // Still beating, but its deadline passed 5 s ago.
    b.reader(b.standIn(), { started_at: now - 20_000, heartbeat_at: now, deadline_at: now - 5000 });
    const run = await b.doctor(['--self-test']);
    expect(run.code).toBe(DOCTOR_EXIT.failed);
    const r = byName(run.report)['bridge reader']!;
    expect(r.status).toBe('fail');
    expect(r.detail).toMatch(/past the deadline it declared/);
    expect(r.measured).toMatchObject({ unattended_max_seconds: 2, attending: false });
    expect(run.report.self_test?.failed).toEqual(['bridge reader']);
  });

  it('an attending reader keeps a long-idle connection inside the bound', async () => {
    const b = await bench('reader-attending');
    await healthy(b);
    b.settings({ unattended_max_seconds: 2 });
    b.consumer(b.standIn(), { started_at: Date.now() - 3_600_000 });
    expect(byName((await b.doctor(['--self-test'])).report)['bridge reader']).toMatchObject({
      status: 'pass',
      measured: expect.objectContaining({ attending: true }),
    });
  });

  it('unread records received longer ago than the bound fail bridge unread', async () => {
    const b = await bench('unread');
    const { session } = await healthy(b);
    b.settings({ unattended_max_seconds: 60 });
    b.spool(['waited two minutes', 'waited too'], session, 120_000);
    const run = await b.doctor(['--self-test']);
    expect(run.code).toBe(DOCTOR_EXIT.failed);
    const u = byName(run.report)['bridge unread']!;
    expect(u).toMatchObject({ status: 'fail', measured: expect.objectContaining({ unread: 2, overdue: 2, cursor_seq: 1, last_seq: 3 }) });
    expect(u.detail).toMatch(/2 of 2 unread records have waited past the unattended bound \(60 s/);
  });

  it('a session lapsed at the Hub fails bridge session', async () => {
    const b = await bench('lapsed');
    await healthy(b);
    const id = await b.session(1);
    await waitFor(async () => (await hubCall(hub, 'GET', `/v1/sessions/${id}`, { token: b.agent.token })).body?.session?.state === 'lapsed', {
      what: `${id} to lapse`,
    });
    const run = await b.doctor(['--self-test']);
    expect(run.code).toBe(DOCTOR_EXIT.failed);
    expect(byName(run.report)['bridge session']).toMatchObject({
      status: 'fail',
      detail: expect.stringContaining(`${id} is lapsed at the Hub`),
      fix: expect.stringMatching(/registers a new session/),
      measured: expect.objectContaining({ state: 'lapsed' }),
    });
  });

  it("--session names another agent session's bridge", async () => {
    const b = await bench('named-elsewhere');
    await healthy(b);
    const run = await b.doctor(['--self-test', '--session', 'some-other-run']);
    expect(byName(run.report).bridge).toMatchObject({ status: 'pass', detail: expect.stringContaining('--session some-other-run') });
  });
});

describe("oh-hai bridge status (retired): the bridge checks only, doctor's envelope", () => {
  it("forwards --session, --state-home and --json, runs no round trip, and exits with doctor's codes", async () => {
    const b = await bench('status-forward');
    await healthy(b);
    b.consumer(await b.deadStamp());
    const before = snapshot(b.dir);
    const run = await runOhHai(['bridge', 'status', '--json', '--session', 'status-forward', '--state-home', b.env.XDG_STATE_HOME!], {
      env: { ...b.env, MA2H_AGENT_SESSION_ID: 'not-this-one' },
    });
    expect(run.stderr).toMatch(/bridge status is retired; forwarding to the bridge checks of oh-hai doctor --self-test/);
    const report = parseReport(run);
    expect(report.self_test).toBeUndefined();
    expect(report.checks.map((c) => c.name)).toEqual(['bridge consumer', 'bridge session', 'bridge reader', 'bridge unread']);
    expect(byName(report)['bridge consumer']!.status).toBe('fail');
    expect(run.code).toBe(DOCTOR_EXIT.failed);
    expect(snapshot(b.dir)).toEqual(before);
  });

  it('exits 21 when the bridge cannot even be located (no credential): nothing was judged', async () => {
    const b = await bench('status-no-credential');
    const run = await runOhHai(['bridge', 'status', '--json'], { env: { ...b.env, MA2H_AGENT_TOKENS: '' } });
    expect(run.code).toBe(DOCTOR_EXIT.couldNotRun);
    const report = parseReport(run);
    expect(report.checks).toHaveLength(1);
    expect(report.checks[0]).toMatchObject({ name: 'bridge', status: 'warn', detail: expect.stringMatching(/could not locate .*no agent credential/) });
  });
});
