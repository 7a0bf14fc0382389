import { describe, expect, it } from 'vitest';
import { leaseEpilogue, warningWindowMs, type ConsumerView } from '../../../src/reader/epilogue.js';
import type { ConsumerRecord, RecordRead, SessionRecord } from '../../../src/spool/records.js';
import { consumerRecord } from '../../helpers/records.js';

const NOW = 1_800_000_000_000;
const session = (over: Partial<SessionRecord> = {}): RecordRead<SessionRecord> => ({
  state: 'ok',
  value: {
    id: 'sess_abc',
    address: 'agent:agt_1#sess_abc',
    name: 'n',
    pinned: false,
    lease_seconds: 900,
    expires_at: '2026-09-18T14:33:07.000Z',
    renewed_at: NOW - 130_000,
    history: [],
    ...over,
  },
});
const consumerRec = (over: Partial<ConsumerRecord> = {}): ConsumerRecord => consumerRecord({ started_at: NOW - 600_000, heartbeat_at: NOW, ...over });
const live: ConsumerView = { record: { state: 'ok', value: consumerRec() }, alive: 'alive' };

describe('lease epilogue', () => {
  it('prints exactly the documented line for a healthy lease, and nothing else', () => {
    expect(leaseEpilogue('oh-hai bridge', session(), live, NOW)).toEqual([
      "oh-hai bridge: lease — sess_abc expires 2026-09-18T14:33:07.000Z (Hub's clock; last renewed 2m 10s ago); consumer pid 777 on host-a.",
    ]);
  });

  it('never prints a time remaining', () => {
    const all = [
      leaseEpilogue('x', session(), live, NOW),
      leaseEpilogue('x', session({ renewed_at: NOW - 700_000 }), live, NOW),
      leaseEpilogue('x', session({ renewed_at: NOW - 2_000_000 }), live, NOW),
    ].flat();
    for (const l of all) expect(l).not.toMatch(/remaining|\bleft\b|expires in|until/);
  });

  it('warns "certainly lapsed" when our elapsed time since renewal exceeds the whole lease', () => {
    const [, warn] = leaseEpilogue('oh-hai bridge', session({ renewed_at: NOW - 901_000 }), live, NOW);
    expect(warn).toMatch(/^oh-hai bridge: ⚠️ lease certainly lapsed: nothing has renewed sess_abc in 15m 01s, longer than its whole 15m 00s lease/);
    expect(warn).toContain('run oh-hai bridge again');
  });

  it('tells a pinned session to clear the pin, since a re-run would exit 11', () => {
    const [, warn] = leaseEpilogue('oh-hai bridge', session({ pinned: true, renewed_at: NOW - 901_000 }), live, NOW);
    expect(warn).toContain('clear or repoint --session / MA2H_SESSION_ID');
  });

  it('warns inside the window: a third of the lease capped at five minutes', () => {
    expect(warningWindowMs(900)).toBe(300_000);
    expect(warningWindowMs(60)).toBe(20_000);
    // 900 s lease: the window opens after 600 s without renewal.
    expect(leaseEpilogue('b', session({ renewed_at: NOW - 600_000 }), live, NOW)).toHaveLength(1);
    const [, warn] = leaseEpilogue('b', session({ renewed_at: NOW - 601_000 }), live, NOW);
    expect(warn).toMatch(
      /^b: ⚠️ lease inside its warning window: nothing has renewed sess_abc in 10m 01s of its 15m 00s lease; if nothing renews it, it lapses once the Hub's clock passes 2026-09-18T14:33:07.000Z/,
    );
    // 60 s lease: after 40 s, not before.
    expect(leaseEpilogue('b', session({ lease_seconds: 60, renewed_at: NOW - 40_000 }), live, NOW)).toHaveLength(1);
    expect(leaseEpilogue('b', session({ lease_seconds: 60, renewed_at: NOW - 41_000 }), live, NOW)).toHaveLength(2);
  });

  it('warns for a consumer that died without recording a stop, and says to re-run', () => {
    const lines = leaseEpilogue('b', session(), { record: live.record, alive: 'dead' }, NOW);
    expect(lines[0]).toContain('consumer pid 777 on host-a (not running).');
    expect(lines[1]).toMatch(
      /^b: ⚠️ the background connection \(pid 777 on host-a\) is not running and recorded no stop: nothing renews sess_abc, so it lapses once the Hub's clock passes 2026-09-18T14:33:07.000Z\. What to do: run oh-hai bridge again/,
    );
  });

  it('a consumer stopped with a stop class points at the stop line rather than a re-run', () => {
    const stopped = consumerRec({ state: 'stopped', exit_code: 3, stop_reason: 'unauthorized' });
    const lines = leaseEpilogue('b', session(), { record: { state: 'ok', value: stopped }, alive: 'dead' }, NOW);
    expect(lines[0]).toContain('consumer pid 777 on host-a (stopped: exit 3, unauthorized).');
    expect(lines[1]).toContain('follow the stop line above first');
    const unreachable = consumerRec({ state: 'stopped', exit_code: 13, stop_reason: 'unreachable' });
    expect(leaseEpilogue('b', session(), { record: { state: 'ok', value: unreachable }, alive: 'dead' }, NOW)[1]).toContain('run oh-hai bridge again');
  });

  it('a consumer stopped by the kill-switch (14) says not to re-run, not that a new run starts a connection', () => {
    const killed = consumerRec({ state: 'stopped', exit_code: 14, stop_reason: 'session_closed_by_operator' });
    const lines = leaseEpilogue('b', session(), { record: { state: 'ok', value: killed }, alive: 'dead' }, NOW);
    expect(lines[1]).toBe(
      'b: ⚠️ the background connection (pid 777) stopped with exit 14: a human closed sess_abc (the operator kill-switch). What to do: do not re-run and do not start a replacement session until a human lifts the stop; the first oh-hai bridge after the lift registers a new session (a new address) by itself.',
    );
    // Also once the closed session's lease has run out: "certainly lapsed … run oh-hai bridge again" would say the opposite.
    const later = leaseEpilogue('b', session({ renewed_at: NOW - 3_600_000 }), { record: { state: 'ok', value: killed }, alive: 'dead' }, NOW);
    expect(later[1]).toBe(lines[1]);
    // A pinned session is not replaced: the lift alone does not bring that run back.
    const pinned = leaseEpilogue('b', session({ pinned: true }), { record: { state: 'ok', value: killed }, alive: 'dead' }, NOW);
    expect(pinned[1]).toMatch(/until a human lifts the stop; the pinned session stays closed after the lift: then clear or repoint --session/);
  });

  it('an absent consumer record warns; an unreadable one says so and warns against relaunching on it', () => {
    const absent = leaseEpilogue('b', session(), { record: { state: 'absent' }, alive: 'unknown' }, NOW);
    expect(absent[0]).toContain('; no consumer record in this state entry.');
    expect(absent[1]).toContain('no background connection has recorded itself here');
    const unreadable = leaseEpilogue('b', session(), { record: { state: 'unreadable', reason: 'garbage' }, alive: 'unknown' }, NOW);
    expect(unreadable[0]).toContain('consumer record unreadable (garbage)');
    expect(unreadable[1]).toContain('Do not relaunch on this alone');
  });

  it("a connection this run started describes that one, not the predecessor's stop the run already relayed", () => {
    const stood = consumerRec({ state: 'stopped', exit_code: 15, stop_reason: 'session_closed' });
    const view = (alive: 'alive' | 'dead'): ConsumerView => ({
      record: { state: 'ok', value: stood },
      alive: 'dead',
      started: { pid: 888, host: 'host-a', alive },
    });
    const starting = leaseEpilogue('b', { state: 'absent' }, view('alive'), NOW);
    expect(starting).toEqual(['b: lease — no session recorded in this state entry yet; consumer pid 888 on host-a (started by this run; not recorded yet).']);
    const died = leaseEpilogue('b', { state: 'absent' }, view('dead'), NOW);
    expect(died[0]).toContain('consumer pid 888 on host-a (not running).');
    expect(died[1]).toMatch(
      /^b: ⚠️ the background connection \(pid 888 on host-a\) is not running and recorded no stop: .*What to do: run oh-hai bridge again/,
    );
    for (const l of [...starting, ...died]) expect(l).not.toMatch(/exit 15|session_closed|stop line/);
  });

  it('after two runs raced to start a connection, the one whose start lost names the live winner, not its own refused consumer', () => {
    const lost: ConsumerView = { ...live, started: { pid: 888, host: 'host-a', alive: 'dead' } };
    expect(leaseEpilogue('b', session(), lost, NOW)).toEqual(leaseEpilogue('b', session(), live, NOW));
    // The record is not a live winner (stopped, or its process gone): this run's own start is the news.
    const stopped: ConsumerView = { record: { state: 'ok', value: consumerRec({ state: 'stopped', exit_code: 15 }) }, alive: 'alive', started: lost.started };
    expect(leaseEpilogue('b', session(), stopped, NOW)[0]).toContain('consumer pid 888 on host-a (not running)');
    expect(leaseEpilogue('b', session(), { ...lost, alive: 'dead' }, NOW)[0]).toContain('consumer pid 888 on host-a (not running)');
  });

  it('reports an absent or unreadable session record as what it is', () => {
    expect(leaseEpilogue('b', { state: 'absent' }, live, NOW)).toEqual(['b: lease — no session recorded in this state entry yet; consumer pid 777 on host-a.']);
    expect(leaseEpilogue('b', { state: 'unreadable', reason: 'not JSON' }, live, NOW)[0]).toBe(
      'b: lease — could not read the session record (not JSON); consumer pid 777 on host-a.',
    );
  });

  it('a run that ends while its connection retries the Hub says so, with the reason, the attempt and for how long', () => {
    const retrying = consumerRec({
      retrying: { attempt: 3, of: 8, at: NOW + 2000, since: NOW - 75_000, reason: 'drain on sess_abc: HTTP 503 unavailable: down' },
    });
    const lines = leaseEpilogue('b', session(), { record: { state: 'ok', value: retrying }, alive: 'alive' }, NOW);
    expect(lines).toHaveLength(2);
    expect(lines[1]).toBe(
      'b: ⚠️ the background connection (pid 777) cannot reach the Hub and is retrying: drain on sess_abc: HTTP 503 unavailable: down (attempt 3 of 8, failing since 1m 15s ago). ' +
        "Nothing renews sess_abc meanwhile, so it lapses once the Hub's clock passes 2026-09-18T14:33:07.000Z; if all 8 attempts fail the connection stops with exit 13. " +
        'What to do: run oh-hai bridge again — it waits while the connection retries, and nothing is lost; if a run exits 13, re-run with your own backoff and escalate if it repeats.',
    );
    // A lapse it caused is the graver news.
    const lapsed = leaseEpilogue('b', session({ renewed_at: NOW - 901_000 }), { record: { state: 'ok', value: retrying }, alive: 'alive' }, NOW);
    expect(lapsed[1]).toContain('lease certainly lapsed');
  });

  describe('a session the spool names past session.json (a connection stopped between spooling it and recording it)', () => {
    const spooled = { id: 'sess_def', address: 'agent:agt_1#sess_def', reason: 'session_lapsed', received_at: new Date(NOW - 62_000).toISOString() };
    const dead: ConsumerView = { record: live.record, alive: 'dead' };

    it('is the session named, with what it replaced, when, and that no renewal of it is recorded', () => {
      const asked: string[] = [];
      const lines = leaseEpilogue('b', session(), dead, NOW, (from) => (asked.push(from), spooled));
      expect(asked).toEqual(['sess_abc']);
      expect(lines[0]).toBe(
        'b: lease — sess_def (agent:agt_1#sess_def), which replaced sess_abc 1m 02s ago (session_lapsed); no renewal of it is recorded here yet, ' +
          'so its expiry is unknown from here (oh-hai session status asks the Hub); consumer pid 777 on host-a (not running).',
      );
      expect(lines[1]).toMatch(
        /^b: ⚠️ the background connection \(pid 777 on host-a\) is not running and recorded no stop: nothing renews sess_def, so it lapses when its lease runs out\./,
      );
      expect(lines.join('\n')).not.toMatch(/sess_abc (expires|in )/);
    });

    it('is not looked for while a connection runs (it records the session as it spools it: a warm run reads no spool), nor for a pinned session', () => {
      const never = (): never => {
        throw new Error('the spool was read');
      };
      expect(leaseEpilogue('b', session(), live, NOW, never)).toHaveLength(1);
      expect(leaseEpilogue('b', session({ pinned: true }), dead, NOW, never)[0]).toContain('lease — sess_abc expires');
    });

    it('is not followed past a kill-switch stop: the line names the session the connection presented, and says not to re-run', () => {
      const closed: ConsumerView = {
        record: { state: 'ok', value: consumerRec({ state: 'stopped', exit_code: 14, stop_reason: 'session_closed_by_operator' }) },
        alive: 'dead',
      };
      const lines = leaseEpilogue('b', session(), closed, NOW, () => spooled);
      expect(lines[0]).toContain('lease — sess_abc expires');
      expect(lines[1]).toContain('a human closed sess_abc');
    });

    it('a spool that names none leaves the recorded lease', () => {
      expect(leaseEpilogue('b', session(), dead, NOW, () => null)[0]).toContain('lease — sess_abc expires');
    });

    it('after oh-hai session close removed session.json: the session the spool names past the one stood down, as the commands attach to it', () => {
      const stood = { from: 'sess_abc', to: spooled };
      const lines = leaseEpilogue('b', { state: 'absent' }, dead, NOW, undefined, () => stood);
      expect(lines[0]).toBe(
        'b: lease — sess_def (agent:agt_1#sess_def), which replaced sess_abc 1m 02s ago (session_lapsed); no renewal of it is recorded here yet, ' +
          'so its expiry is unknown from here (oh-hai session status asks the Hub); consumer pid 777 on host-a (not running).',
      );
      expect(lines[1]).toContain('nothing renews sess_def');
      // None past it, or a connection running: the record's own words.
      expect(leaseEpilogue('b', { state: 'absent' }, dead, NOW, undefined, () => null)[0]).toContain('no session recorded in this state entry yet');
      const never = (): never => {
        throw new Error('stood-down.json was read');
      };
      expect(leaseEpilogue('b', { state: 'absent' }, live, NOW, undefined, never)[0]).toContain('no session recorded in this state entry yet');
    });
  });
});
