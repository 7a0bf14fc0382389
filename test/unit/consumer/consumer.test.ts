import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runConsumer, type ConsumerEnd } from '../../../src/consumer/index.js';
import type { HubPort } from '../../../src/consumer/hub-port.js';
import { EXIT } from '../../../src/core/index.js';
import type { HubFailure, HubResult } from '../../../src/hub/client/index.js';
import type { Capability, DrainResult, Session, SessionLease } from '../../../src/hub/contract/index.js';
import { openStateDir, sessionStateDir, type ConsumerSettings, type StateDir } from '../../../src/spool/index.js';
import { fakeClock, type FakeClock } from '../../../src/util/clock.js';
import { waitFor } from '../../helpers/wait.js';

/**
 * The Consumer in-process: a fake Hub port (ConsumerOptions.hub) and a fake clock, so its
 * backoff, its budget refill, its lease renewals and its unattended stop are decided on time
 * that moves only when the test moves it — nothing here waits on the wall clock. The state
 * entry is real files in a temp dir.
 */

const NOW = Date.parse('2026-12-01T12:00:00.000Z');
const AGENT = 'agt_unit';
const HUB_DATE = 'Tue, 01 Dec 2026 12:00:00 GMT';

const capability: Capability = {
  protocol: 'MA2H',
  version: '0.5',
  hub: null,
  server_time: null,
  inbound: { session_param: true, stream_url: null, max_wait_seconds: 20, stream_max_hold_seconds: null, keepalive_seconds: null },
  signature_algs: ['hmac-sha256'],
  replay_window_seconds: null,
  session: null,
  account: null,
};

const session = (id: string, expires: string): Session => ({
  id,
  agent_id: AGENT,
  address: `agent:${AGENT}#${id}`,
  name: 'unit',
  state: 'active',
  lease_seconds: 900,
  expires_at: expires,
  last_renewed_at: expires,
  created_at: expires,
  closed_at: null,
  holder: null,
});

const ok = <T>(value: T): HubResult<T> => ({ ok: true, status: 200, value, serverDate: HUB_DATE });
const down: HubFailure = { kind: 'network', message: 'ECONNREFUSED' };
const refused = <T>(failure: HubFailure = down): HubResult<T> => ({ ok: false, failure });

/** A Hub whose answers each test scripts; it counts every call. */
class FakeHub implements HubPort {
  calls: string[] = [];
  capabilityAnswer: () => HubResult<Capability> = () => ok(capability);
  drainAnswer: (n: number) => HubResult<DrainResult> = () => ok({ session: null, messages: [] });
  private drains = 0;

  async close(): Promise<void> {}
  async capability(): Promise<HubResult<Capability>> {
    this.calls.push('capability');
    return this.capabilityAnswer();
  }
  async whoami(): Promise<ReturnType<HubPort['whoami']> extends Promise<infer R> ? R : never> {
    this.calls.push('whoami');
    return ok({ kind: 'agent', agent: { id: AGENT } } as never);
  }
  async createSession(): Promise<HubResult<Session>> {
    this.calls.push('createSession');
    return ok(session('sess_1', '2026-12-01T12:15:00.000Z'));
  }
  async getSession(id: string): Promise<HubResult<Session>> {
    this.calls.push(`getSession ${id}`);
    return ok(session(id, '2026-12-01T12:15:00.000Z'));
  }
  async closeSession(id: string): Promise<HubResult<Session>> {
    this.calls.push(`closeSession ${id}`);
    return ok({ ...session(id, '2026-12-01T12:15:00.000Z'), state: 'closed' });
  }
  async drain(): Promise<HubResult<DrainResult>> {
    this.calls.push('drain');
    return this.drainAnswer(++this.drains);
  }
  async ack(): Promise<never> {
    throw new Error('no mail in these tests, so nothing to ack');
  }
  async openStream(): Promise<never> {
    throw new Error('these settings ask for long-poll');
  }
  count(call: string): number {
    return this.calls.filter((c) => c === call).length;
  }
}

const dirs: string[] = [];
afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));

interface World {
  hub: FakeHub;
  clock: FakeClock;
  stateDir: StateDir;
  shutdown: AbortController;
  ended: Promise<ConsumerEnd>;
  done(): boolean;
  /** Move fake time forward `ms` in `step`s, letting the consumer's promises run between steps. */
  pass(ms: number, step?: number): Promise<void>;
}

const turn = (): Promise<void> => new Promise((r) => setImmediate(r));

function start(over: Partial<ConsumerSettings> = {}, env: Record<string, string> = {}, hub = new FakeHub()): World {
  const root = mkdtempSync(path.join(os.tmpdir(), 'oh-hai-consumer-unit-'));
  dirs.push(root);
  const dir = sessionStateDir(root, 'c'.repeat(32));
  const opened = openStateDir(dir, { create: true });
  if (!opened.ok) throw new Error(opened.reason);
  const settings: ConsumerSettings = {
    hub: 'http://127.0.0.1:9',
    agent_id: AGENT,
    session_key: 'unit',
    pinned: null,
    name: 'unit',
    transport: 'poll',
    interval_seconds: 2,
    max_retries: 3,
    unattended_max_seconds: 900,
    allow_from: null,
    agent: null,
    leg: 'session',
    ...over,
  };
  opened.value.write('settings', settings);
  const clock = fakeClock(NOW);
  const shutdown = new AbortController();
  let finished = false;
  const ended = runConsumer({
    dir,
    mode: 'auto',
    env: { OH_HAI_TOKEN: 'ohh_a_unit-test-token', OH_HAI_BACKOFF_MIN_MS: '1000', OH_HAI_BACKOFF_MAX_MS: '30000', ...env },
    clock,
    pid: process.pid,
    stderr: null,
    shutdown: shutdown.signal,
    version: 'unit',
    random: () => 0.5,
    hub: () => hub,
  }).then((e) => {
    finished = true;
    return e;
  });
  return {
    hub,
    clock,
    stateDir: opened.value,
    shutdown,
    ended,
    done: () => finished,
    async pass(ms, step = 100) {
      for (let t = 0; t < ms && !finished; t += step) {
        clock.advance(Math.min(step, ms - t));
        // What a fired timer starts runs on promises and a fake Hub: a few turns finish it.
        for (let i = 0; i < 5; i++) await turn();
      }
    },
  };
}

/** Until `cond` holds (or the consumer ended): real time only for the consumer's own start — the lock, the files. */
const until = (w: World, cond: () => boolean, what: string) => waitFor(() => cond() || w.done(), { what });

async function stopped(w: World) {
  w.shutdown.abort('SIGTERM');
  const end = await w.ended;
  expect(end.kind).toBe('stopped');
  return end.stop;
}

describe('the Consumer on a fake Hub and a fake clock', () => {
  it('backs off a Hub that does not answer on the clock, full jitter doubling from the minimum, and stops 13 after max_retries + 1 attempts', async () => {
    const hub = new FakeHub();
    hub.capabilityAnswer = () => refused();
    const w = start({ max_retries: 3 }, {}, hub);
    await until(w, () => hub.count('capability') === 1 && w.clock.pending() > 0, 'the first attempt and its wait');
    // random 0.5: half of min(max, 1000 · 2^(n-1)) — 500, 1000, 2000 ms.
    const waits = [500, 1000, 2000];
    for (const [i, ms] of waits.entries()) {
      await w.pass(ms - 1, ms - 1);
      expect(hub.count('capability'), `attempt ${i + 2} waits the whole ${ms} ms`).toBe(i + 1);
      await w.pass(1, 1);
      expect(hub.count('capability')).toBe(i + 2);
    }
    const end = await w.ended;
    expect(end.kind).toBe('stopped');
    expect(end.stop.exit).toBe(EXIT.unreachable);
    expect(end.stop.message).toMatch(/4 attempts failed in a row \(max_retries 3\)/);
    expect(w.clock.slept).toEqual(waits);
    expect(w.stateDir.read('consumer')).toMatchObject({ state: 'ok', value: { state: 'stopped', exit_code: EXIT.unreachable, stop_reason: 'unreachable' } });
  });

  it("a Hub's Retry-After is a floor under the jittered delay", async () => {
    const hub = new FakeHub();
    let n = 0;
    hub.capabilityAnswer = () =>
      ++n === 1 ? refused({ kind: 'http', status: 429, code: 'rate_limited', message: 'slow down', details: {}, retryAfterSeconds: 7 }) : ok(capability);
    const w = start({}, {}, hub);
    await until(w, () => hub.count('capability') === 1 && w.clock.pending() > 0, 'the first attempt and its wait');
    await w.pass(6_999, 6_999);
    expect(hub.count('capability')).toBe(1);
    await w.pass(1, 1);
    expect(hub.count('capability')).toBe(2);
    expect(await stopped(w)).toMatchObject({ exit: EXIT.ok, reason: 'signal' });
  });

  it('a drain that answers refills the budget: failures are counted in a row, not over a lifetime', async () => {
    const hub = new FakeHub();
    // Two failures, one answer, then failures only: with max_retries 3, a budget never refilled
    // would stop at the 4th failure overall (drain 5); refilled, it stops at the 4th in a row (drain 7).
    hub.drainAnswer = (n) => (n === 3 ? ok({ session: null, messages: [] }) : refused());
    const w = start({ max_retries: 3 }, {}, hub);
    await until(w, () => hub.count('drain') === 1, 'the first drain');
    for (let i = 0; i < 400 && !w.done(); i++) await w.pass(1000, 1000);
    const end = await w.ended;
    expect(end.stop.exit).toBe(EXIT.unreachable);
    expect(hub.count('drain')).toBe(7);
  });

  it("every lease a drain reports is written to session.json: the Hub's expires_at verbatim, renewed_at on our clock", async () => {
    const hub = new FakeHub();
    const leases: SessionLease[] = [
      { id: 'sess_1', expires_at: '2026-12-01T12:15:02.000Z', lease_seconds: 900 },
      { id: 'sess_1', expires_at: 'whatever the Hub says, verbatim', lease_seconds: 900 },
    ];
    hub.drainAnswer = (n) => ok({ session: leases[Math.min(n, leases.length) - 1]!, messages: [] });
    const w = start({ interval_seconds: 2 }, {}, hub);
    await until(w, () => hub.count('drain') === 1, 'the first drain');
    expect(hub.calls.slice(0, 3)).toEqual(['whoami', 'capability', 'createSession']);
    expect(w.stateDir.read('session')).toMatchObject({ state: 'ok', value: { id: 'sess_1', expires_at: '2026-12-01T12:15:02.000Z', renewed_at: NOW } });
    await w.pass(2000, 500);
    expect(hub.count('drain')).toBe(2);
    expect(w.stateDir.read('session')).toMatchObject({ state: 'ok', value: { expires_at: 'whatever the Hub says, verbatim', renewed_at: NOW + 2000 } });
    // A lease for another session (one this entry no longer holds) changes nothing.
    hub.drainAnswer = () => ok({ session: { id: 'sess_other', expires_at: 'never', lease_seconds: 1 }, messages: [] });
    await w.pass(2000, 500);
    expect(hub.count('drain')).toBe(3);
    expect(w.stateDir.read('session')).toMatchObject({ state: 'ok', value: { id: 'sess_1', expires_at: 'whatever the Hub says, verbatim' } });
    await stopped(w);
  });

  it('with no reader attending, stops exit 0 "unattended" once unattended_max_seconds have passed on its clock, not before', async () => {
    const w = start({ unattended_max_seconds: 60, interval_seconds: 5 }, { OH_HAI_HEARTBEAT_MS: '1000' });
    await until(w, () => w.hub.count('drain') === 1, 'the first drain');
    await w.pass(58_000, 1000);
    expect(w.done()).toBe(false);
    await w.pass(4_000, 1000);
    const end = await w.ended;
    expect(end.stop).toMatchObject({ exit: EXIT.ok, reason: 'unattended' });
    expect(end.stop.message).toMatch(/no reader has attended this entry for 1m 00s \(unattended_max_seconds 60; no reader record\)/);
    // Stopped without closing the session: the lease lapses on its own.
    expect(w.hub.calls.some((c) => c.startsWith('closeSession'))).toBe(false);
  });
});
