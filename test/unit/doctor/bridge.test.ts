import { describe, expect, it } from 'vitest';
import type { Liveness } from '../../../src/spool/index.js';
import {
  judgeBridge,
  judgeConsumer,
  judgeReader,
  judgeSession,
  judgeUnread,
  type Bound,
  type BridgeProbe,
  type HubSession,
} from '../../../src/cli/doctor/checks/bridge.js';
import type { BridgeFacts, UnreadRead } from '../../../src/cli/doctor/checks/bridge-read.js';
import type { Session } from '../../../src/hub/contract/index.js';
import type { ConsumerRecord, ProcessStamp, ReaderRecord, RecordRead, SessionRecord } from '../../../src/spool/index.js';
import { consumerRecord, readerRecord } from '../../helpers/records.js';

const T0 = 1_800_000_000_000;
const DIR = '/state/oh-hai/bridge/sessions/abc';
const BOUND: Bound = { seconds: 900, source: "the connection's settings.json" };

const consumer = (over: Partial<ConsumerRecord> = {}): RecordRead<ConsumerRecord> => ({
  state: 'ok',
  value: consumerRecord({ pid: 200, host: 'h', start_time: '22', started_at: T0, heartbeat_at: T0 + 50_000, ...over }),
});

const reader = (over: Partial<ReaderRecord> = {}): RecordRead<ReaderRecord> => ({
  state: 'ok',
  value: readerRecord({ host: 'h', started_at: T0, heartbeat_at: T0 + 50_000, deadline_at: T0 + 570_000, ...over }),
});

const sessionRecord: RecordRead<SessionRecord> = {
  state: 'ok',
  value: {
    id: 'sess_a',
    address: 'agent:agt_me#sess_a',
    name: 'n',
    pinned: false,
    lease_seconds: 900,
    expires_at: '2027-01-15T08:15:00.000Z',
    renewed_at: T0 + 40_000,
    history: [],
  },
};

const hubSession = (state: Session['state']): HubSession => ({
  asked: true,
  result: {
    ok: true,
    status: 200,
    serverDate: null,
    value: {
      id: 'sess_a',
      agent_id: 'agt_me',
      address: 'agent:agt_me#sess_a',
      name: 'n',
      state,
      lease_seconds: 900,
      expires_at: '2027-01-15T08:15:00.000Z',
      last_renewed_at: '2027-01-15T08:00:00.000Z',
      created_at: '2027-01-15T07:00:00.000Z',
      closed_at: null,
      holder: null,
    },
  },
});

const probe = (nowMs: number, dead: (s: ProcessStamp) => boolean = () => false, unknown: (s: ProcessStamp) => boolean = () => false): BridgeProbe => ({
  nowMs,
  staleMs: 60_000,
  liveness: (s): Liveness => (dead(s) ? 'dead' : unknown(s) ? 'unknown' : 'alive'),
});

const unreadOk = (receivedAt: string[], over: Partial<Extract<UnreadRead, { state: 'ok' }>> = {}): UnreadRead => ({
  state: 'ok',
  cursorSeq: 3,
  lastSeq: 3 + receivedAt.length,
  rewound: null,
  damaged: null,
  receivedAt,
  ...over,
});

const iso = (ms: number): string => new Date(ms).toISOString();

describe('bridge consumer', () => {
  it('passes a running consumer whose pid is alive and whose heartbeat is fresh', () => {
    const c = judgeConsumer({ consumer: consumer(), dir: DIR }, probe(T0 + 60_000));
    expect(c).toMatchObject({ name: 'bridge consumer', status: 'pass', measured: { pid: 200, state: 'running', heartbeat_age_ms: 10_000 } });
    expect(c.detail).toMatch(/^live: pid 200 on h/);
    expect(c.fix).toBeUndefined();
  });

  it('fails a dead pid (no stop recorded) with the relaunch fix', () => {
    const c = judgeConsumer(
      { consumer: consumer(), dir: DIR },
      probe(T0 + 60_000, (s) => s.pid === 200),
    );
    expect(c.status).toBe('fail');
    expect(c.detail).toMatch(/pid 200 on h no longer exists/);
    expect(c.fix).toMatch(/re-run oh-hai bridge/);
  });

  it("fails a stopped consumer, naming its stop reason, exit code, and the exit table's advice", () => {
    const c = judgeConsumer(
      {
        consumer: consumer({
          state: 'stopped',
          exit_code: 3,
          stop_reason: 'unauthorized',
          stop_message: 'the Hub refused the credential',
          stopped_at: T0 + 55_000,
        }),
        dir: DIR,
      },
      probe(T0 + 60_000),
    );
    expect(c.status).toBe('fail');
    expect(c.detail).toMatch(/stopped 5s ago with exit 3 \(unauthorized\): the Hub refused the credential/);
    expect(c.fix).toMatch(/exit 3 means: auth failed .* a human must fix it/);
    expect(c.measured).toMatchObject({ exit_code: 3, stop_reason: 'unauthorized' });
  });

  it('a connection stopped by the kill-switch: not to re-run until a human lifts the stop, and what after', () => {
    const killed = consumer({ state: 'stopped', exit_code: 14, stop_reason: 'session_closed_by_operator', stopped_at: T0 + 10_000 });
    const c = judgeConsumer({ consumer: killed, dir: DIR }, probe(T0 + 60_000));
    expect(c.status).toBe('fail');
    expect(c.fix).toMatch(
      /^exit 14 means: .* do not re-run and do not start a replacement session until a human lifts the stop; after the lift, re-run oh-hai bridge/,
    );
  });

  it('fails when no consumer record exists in an existing entry', () => {
    expect(judgeConsumer({ consumer: { state: 'absent' }, dir: DIR }, probe(T0))).toMatchObject({ status: 'fail', detail: /no connection has run/ });
  });

  it('warns — never fails — on a record that exists and cannot be read', () => {
    const c = judgeConsumer({ consumer: { state: 'unreadable', reason: 'consumer.json is not valid JSON (7 bytes)' }, dir: DIR }, probe(T0));
    expect(c.status).toBe('warn');
    expect(c.detail).toMatch(/could not be read .*not valid JSON.*unknown/);
    expect(c.fix).toMatch(/do not relaunch/);
  });

  it('warns on a live pid with a stale heartbeat (wedged), and judges another host by its heartbeat', () => {
    const stale = judgeConsumer({ consumer: consumer({ heartbeat_at: T0 }), dir: DIR }, probe(T0 + 61_000));
    expect(stale).toMatchObject({ status: 'warn', detail: /alive but its heartbeat 1m 01s ago/ });
    const elsewhere = (s: ProcessStamp) => s.pid === 200;
    expect(
      judgeConsumer(
        { consumer: consumer(), dir: DIR },
        probe(T0 + 60_000, () => false, elsewhere),
      ).status,
    ).toBe('pass');
    expect(
      judgeConsumer(
        { consumer: consumer({ heartbeat_at: T0 }), dir: DIR },
        probe(T0 + 61_000, () => false, elsewhere),
      ).status,
    ).toBe('warn');
  });
});

describe('bridge session', () => {
  const facts = { session: sessionRecord, spooled: null, consumer: consumer(), dir: DIR };

  it('passes an active session, printing the Hub instants verbatim and labelled', () => {
    const c = judgeSession(facts, hubSession('active'), T0 + 60_000);
    expect(c.status).toBe('pass');
    expect(c.detail).toContain("expires 2027-01-15T08:15:00.000Z (Hub's clock)");
    expect(c.detail).toContain('last saw it renewed 20s ago');
    expect(c.detail).not.toMatch(/remaining|left/);
  });

  it('fails a lapsed, closed or operator-closed session, each with its own fix', () => {
    expect(judgeSession(facts, hubSession('lapsed'), T0)).toMatchObject({ status: 'fail', fix: /registers a new session/ });
    expect(judgeSession(facts, hubSession('closed'), T0)).toMatchObject({ status: 'fail', fix: /stood it down/ });
    expect(judgeSession(facts, hubSession('closed_by_operator'), T0)).toMatchObject({
      status: 'fail',
      fix: /do not re-run .* until a human lifts the stop; the first oh-hai bridge after the lift registers a new session by itself$/,
    });
    const pinned = { ...facts, session: { state: 'ok' as const, value: { ...sessionRecord.value, pinned: true } } };
    expect(judgeSession(pinned, hubSession('lapsed'), T0).fix).toMatch(/clear or repoint --session/);
  });

  it('past a record the spool has moved on from, judges the session the spool names, with no lease seen here', () => {
    const spooled = { ...facts, spooled: { id: 'sess_next', address: 'agent:agt_1#sess_next' } };
    const c = judgeSession(spooled, hubSession('active'), T0 + 60_000);
    expect(c).toMatchObject({
      status: 'pass',
      measured: expect.objectContaining({ session: 'sess_next', renewed_age_ms: null, expires_at: expect.any(String) }),
    });
    expect(c.detail).toMatch(/^sess_next is active at the Hub: .*session\.json still names sess_\w+, which the spool says sess_next replaced/);
    expect(judgeSession(spooled, hubSession('closed'), T0)).toMatchObject({
      status: 'fail',
      detail: /^sess_next is closed at the Hub: agent:agt_1#sess_next no longer/,
    });
  });

  it('fails a session the Hub does not know; warns when the Hub could not be asked', () => {
    const notFound: HubSession = {
      asked: true,
      result: { ok: false, failure: { kind: 'http', status: 404, code: 'session_not_found', message: 'no session', details: {}, retryAfterSeconds: null } },
    };
    expect(judgeSession(facts, notFound, T0).status).toBe('fail');
    const down: HubSession = { asked: true, result: { ok: false, failure: { kind: 'network', message: 'ECONNREFUSED' } } };
    expect(judgeSession(facts, down, T0)).toMatchObject({ status: 'warn', detail: /ECONNREFUSED.*unknown/ });
    expect(judgeSession(facts, { asked: false, why: 'no credential' }, T0).status).toBe('warn');
  });

  it('warns on an unreadable session record; fails a missing one unless the connection is starting', () => {
    expect(judgeSession({ ...facts, session: { state: 'unreadable', reason: 'garbage' } }, hubSession('active'), T0).status).toBe('warn');
    expect(judgeSession({ ...facts, session: { state: 'absent' } }, hubSession('active'), T0).status).toBe('fail');
    expect(judgeSession({ ...facts, session: { state: 'absent' }, consumer: consumer({ state: 'starting' }) }, hubSession('active'), T0).status).toBe('warn');
  });
});

describe('bridge reader', () => {
  it('passes an attending reader', () => {
    const c = judgeReader({ reader: reader(), consumer: consumer(), dir: DIR }, BOUND, probe(T0 + 60_000));
    expect(c).toMatchObject({ status: 'pass', detail: /a reader attends: pid 100/, measured: { attending: true } });
  });

  it('a reader past its declared deadline does not attend; past the unattended bound that fails', () => {
    // Still beating (a reader parked in a long turn), but its deadline passed 900 s ago.
    const now = T0 + 2_000_000;
    const past = reader({ heartbeat_at: now - 1000, deadline_at: now - 900_000 });
    const c = judgeReader({ reader: past, consumer: consumer(), dir: DIR }, BOUND, probe(now));
    expect(c.status).toBe('fail');
    expect(c.detail).toMatch(/past the deadline it declared/);
    expect(c.measured).toMatchObject({ unattended_ms: 900_000, attending: false });
  });

  it('measures from the LATER of the reader heartbeat and the connection start', () => {
    // The reader's last beat is long ago, but the connection started 100 s before now: inside the bound.
    const old = reader({ heartbeat_at: T0, deadline_at: T0 + 10_000 });
    const c = judgeReader({ reader: old, consumer: consumer({ started_at: T0 + 2_000_000 }), dir: DIR }, BOUND, probe(T0 + 2_100_000));
    expect(c).toMatchObject({ status: 'pass', measured: { unattended_ms: 100_000 } });
    // And the other way round: a reader that exited (pid gone) 100 s ago, a connection started long before.
    const gone = reader({ heartbeat_at: T0 + 2_000_000, deadline_at: T0 + 3_000_000 });
    const d = judgeReader(
      { reader: gone, consumer: consumer(), dir: DIR },
      BOUND,
      probe(T0 + 2_100_000, (s) => s.pid === 100),
    );
    expect(d).toMatchObject({ status: 'pass', detail: /no longer exists.*inside the unattended bound/, measured: { unattended_ms: 100_000 } });
  });

  it('with an unreadable connection record the interval is an upper bound: warn, never pass nor fail', () => {
    const unreadable: RecordRead<ConsumerRecord> = { state: 'unreadable', reason: 'garbage' };
    const inside = judgeReader({ reader: reader({ heartbeat_at: T0, deadline_at: T0 + 1 }), consumer: unreadable, dir: DIR }, BOUND, probe(T0 + 10_000));
    expect(inside.status).toBe('warn');
    expect(inside.detail).toMatch(/at most 10s — an upper bound, not a measurement/);
    expect(inside.measured).toMatchObject({ upper_bound: true });
    const beyond = judgeReader({ reader: reader({ heartbeat_at: T0, deadline_at: T0 + 1 }), consumer: unreadable, dir: DIR }, BOUND, probe(T0 + 5_000_000));
    expect(beyond.status).toBe('warn');
  });

  it('a connection stopped by a stop class is not judged by the unattended bound: no advice to re-run', () => {
    const killed = consumer({ state: 'stopped', exit_code: 14, stop_reason: 'session_closed_by_operator', stopped_at: T0 + 10_000 });
    const c = judgeReader({ reader: reader({ heartbeat_at: T0, deadline_at: T0 + 1 }), consumer: killed, dir: DIR }, BOUND, probe(T0 + 5_000_000));
    expect(c.status).toBe('skip');
    expect(c.detail).toMatch(/connection stopped with exit 14 \(session_closed_by_operator\), not for want of a reader/);
    expect(c.fix).toBeUndefined();
    // A clean stop (the unattended bound itself) and an unreachable Hub are still judged: re-running is their fix.
    for (const exit_code of [0, 13]) {
      const stopped = consumer({ state: 'stopped', exit_code, stop_reason: 'unattended', stopped_at: T0 + 10_000 });
      expect(judgeReader({ reader: reader({ heartbeat_at: T0, deadline_at: T0 + 1 }), consumer: stopped, dir: DIR }, BOUND, probe(T0 + 5_000_000)).status).toBe(
        'fail',
      );
    }
  });

  it('warns on an unreadable reader record', () => {
    expect(judgeReader({ reader: { state: 'unreadable', reason: 'garbage' }, consumer: consumer(), dir: DIR }, BOUND, probe(T0)).status).toBe('warn');
  });

  it('a direct-mode connection has no bound: no reader is a warn, not a fail', () => {
    const c = judgeReader({ reader: { state: 'absent' }, consumer: consumer({ mode: 'direct' }), dir: DIR }, BOUND, probe(T0 + 10_000_000));
    expect(c).toMatchObject({ status: 'warn', detail: /direct mode/ });
  });
});

describe('bridge unread', () => {
  const now = T0 + 10_000_000;
  it('passes with nothing unread, and with unread records inside the bound', () => {
    expect(judgeUnread({ unread: unreadOk([]), dir: DIR }, BOUND, now)).toMatchObject({ status: 'pass', detail: /nothing unread/ });
    expect(judgeUnread({ unread: unreadOk([iso(now - 5000)]), dir: DIR }, BOUND, now)).toMatchObject({ status: 'pass', measured: { unread: 1, overdue: 0 } });
  });

  it('fails when records after the cursor were received longer ago than the bound', () => {
    const c = judgeUnread({ unread: unreadOk([iso(now - 901_000), iso(now - 5000)]), dir: DIR }, BOUND, now);
    expect(c).toMatchObject({ status: 'fail', measured: { unread: 2, overdue: 1 } });
    expect(c.detail).toMatch(/1 of 2 unread records have waited past the unattended bound/);
  });

  it('warns when the cursor or spool cannot be read, and on a damaged spool line', () => {
    expect(judgeUnread({ unread: { state: 'unreadable', reason: 'the cursor could not be read (garbage)' }, dir: DIR }, BOUND, now).status).toBe('warn');
    expect(judgeUnread({ unread: unreadOk([], { damaged: 'byte 10: the line does not end with a sum' }), dir: DIR }, BOUND, now).status).toBe('warn');
  });
});

describe('judgeBridge', () => {
  const facts = (over: Partial<BridgeFacts> = {}): BridgeFacts => ({
    dir: DIR,
    consumer: consumer(),
    session: sessionRecord,
    spooled: null,
    reader: reader(),
    settings: { state: 'absent' },
    unread: unreadOk([]),
    ...over,
  });

  it('gives the four named checks', () => {
    expect(judgeBridge(facts(), hubSession('active'), BOUND, probe(T0 + 60_000)).map((c) => [c.name, c.status])).toEqual([
      ['bridge consumer', 'pass'],
      ['bridge session', 'pass'],
      ['bridge reader', 'pass'],
      ['bridge unread', 'pass'],
    ]);
  });

  it('uses the bound the connection runs with (settings.json) over the configured one', () => {
    const settings = {
      state: 'ok' as const,
      value: {
        hub: 'h',
        agent_id: 'a',
        session_key: 'k',
        pinned: null,
        name: 'n',
        transport: 'auto' as const,
        interval_seconds: 5,
        max_retries: 8,
        unattended_max_seconds: 30,
        allow_from: null,
        agent: null,
        leg: 'session' as const,
      },
    };
    const checks = judgeBridge(
      facts({ settings, reader: { state: 'absent' }, consumer: consumer({ started_at: T0 }) }),
      hubSession('active'),
      BOUND,
      probe(T0 + 31_000),
    );
    expect(checks.find((c) => c.name === 'bridge reader')).toMatchObject({ status: 'fail', measured: { unattended_max_seconds: 30 } });
  });

  it('a stood-down bridge (exit 15) is one passing line, not four failures', () => {
    const checks = judgeBridge(
      facts({ consumer: consumer({ state: 'stopped', exit_code: 15, stop_reason: 'session_closed', stopped_at: T0 }) }),
      hubSession('closed'),
      BOUND,
      probe(T0 + 60_000),
    );
    expect(checks).toHaveLength(1);
    expect(checks[0]).toMatchObject({ name: 'bridge', status: 'pass', detail: /stood down .*no bridge for this agent session/ });
  });
});
