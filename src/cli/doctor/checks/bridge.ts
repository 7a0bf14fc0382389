import { readerAttendance } from '../../../consumer/index.js';
import type { Session } from '../../../hub/contract/index.js';
import type { HubResult } from '../../../hub/client/index.js';
import type { ConsumerRecord, ProcessStamp, Liveness } from '../../../spool/index.js';
import { formatDuration } from '../../../util/duration.js';
import { BRIDGE_EXIT_TABLE, EXIT, rerunRepairs } from '../../../core/index.js';
import { check, type Check } from '../report.js';
import type { BridgeFacts, UnreadRead } from './bridge-read.js';
import { describeFailure } from './hub.js';

/**
 * The four bridge checks, judged from facts read off the entry (bridge-read.ts) and one
 * GET /v1/sessions/:id. The rule they all keep: a record that exists and could not be read
 * is an unknown, reported as a warn — a fail is what a health script relaunches on, and a
 * relaunch over a live connection changes the session's address.
 */

export interface BridgeProbe {
  nowMs: number;
  /** A heartbeat older than this is not attendance (the consumer's own bound). */
  staleMs: number;
  liveness(stamp: ProcessStamp): Liveness;
}

/** The unattended bound that applies, and where it was read. */
export interface Bound {
  seconds: number;
  source: string;
}

export type HubSession = { asked: false; why: string } | { asked: true; result: HubResult<Session> };

const iso = (ms: number): string => new Date(ms).toISOString();
const ago = (nowMs: number, thenMs: number): string => `${formatDuration(nowMs - thenMs)} ago`;

const RELAUNCH = 're-run oh-hai bridge as a background task (and again after every exit): it starts a new connection, keeping the spool and cursor';
const UNKNOWN_FIX = (dir: string): string =>
  `do not relaunch on this — a relaunch over a live connection changes the address; read ${dir}/bridge.log, and fix or remove the damaged file`;

function stoppedFix(c: ConsumerRecord): string {
  if (c.exit_code === EXIT.ok || c.exit_code === null) return RELAUNCH;
  // The table's bare "do not re-run" contradicts `hub lift`, which tells the human to let the
  // agent re-run: doctor cannot see whether the stop was lifted (lift21), so it says both.
  if (c.exit_code === EXIT.operatorClosed)
    return 'exit 14 means: a human closed your session — the operator kill-switch — do not re-run and do not start a replacement session until a human lifts the stop; after the lift, re-run oh-hai bridge (bridge session says whether a pin must be cleared first)';
  const row = BRIDGE_EXIT_TABLE.find((r) => r.code === c.exit_code);
  return row ? `exit ${c.exit_code} means: ${row.meaning} — ${row.todo}` : RELAUNCH;
}

export function judgeConsumer(facts: Pick<BridgeFacts, 'consumer' | 'dir'>, probe: BridgeProbe): Check {
  const name = 'bridge consumer';
  const read = facts.consumer;
  if (read.state === 'absent') {
    return check(name, 'fail', 'no connection has run for this bridge (there is no consumer.json)', {
      fix: RELAUNCH,
      measured: { entry: facts.dir, state: null },
    });
  }
  if (read.state === 'unreadable') {
    return check(name, 'warn', `the connection's record exists and could not be read (${read.reason}): whether it runs is unknown`, {
      fix: UNKNOWN_FIX(facts.dir),
      measured: { entry: facts.dir, state: null },
    });
  }
  const c = read.value;
  const heartbeatAge = probe.nowMs - c.heartbeat_at;
  const measured = {
    entry: facts.dir,
    state: c.state,
    pid: c.pid,
    host: c.host,
    mode: c.mode,
    transport: c.transport,
    started_at: iso(c.started_at),
    heartbeat_age_ms: Math.max(0, Math.round(heartbeatAge)),
    exit_code: c.exit_code,
    stop_reason: c.stop_reason,
  };
  if (c.state === 'stopped') {
    const when = c.stopped_at === null ? '' : ` ${ago(probe.nowMs, c.stopped_at)}`;
    return check(
      name,
      'fail',
      `the connection stopped${when} with exit ${c.exit_code ?? '?'} (${c.stop_reason ?? 'no reason recorded'}): ${c.stop_message ?? ''}`.trimEnd(),
      {
        fix: stoppedFix(c),
        measured,
      },
    );
  }
  const who = `pid ${c.pid} on ${c.host}`;
  const beat = `heartbeat ${ago(probe.nowMs, c.heartbeat_at)}`;
  const stale = heartbeatAge > probe.staleMs;
  const alive = probe.liveness(c);
  if (alive === 'dead') {
    return check(name, 'fail', `${who} no longer exists: the connection died without recording why (last ${beat})`, { fix: RELAUNCH, measured });
  }
  const live = `${c.state} since ${iso(c.started_at)}, ${c.mode} mode, ${c.transport ?? 'transport not chosen yet'}`;
  if (alive === 'unknown') {
    const why = `${who} cannot be checked from here (another host, or its start time is unreadable), so it is judged by its heartbeat`;
    if (stale) {
      return check(name, 'warn', `${why}: ${beat}, older than the ${probe.staleMs / 1000} s stale bound — it may be gone`, {
        fix: UNKNOWN_FIX(facts.dir),
        measured,
      });
    }
    return check(name, 'pass', `${why}: ${beat}; ${live}`, { measured });
  }
  if (stale) {
    return check(name, 'warn', `${who} is alive but its ${beat} (stale past ${probe.staleMs / 1000} s): it may be wedged`, {
      fix: `read ${facts.dir}/bridge.log before stopping anything; if it is wedged, oh-hai session close --keep-connection and then oh-hai bridge restart it`,
      measured,
    });
  }
  return check(name, 'pass', `live: ${who}, ${live}, ${beat}`, { measured });
}

const SESSION_FIX: Record<string, (pinned: boolean) => string> = {
  lapsed: (pinned) =>
    pinned
      ? 'the pinned session is terminal: clear or repoint --session / MA2H_SESSION_ID, then re-run oh-hai bridge'
      : 're-run oh-hai bridge: it registers a new session and says that the address changed',
  closed: () => 'this agent stood it down (oh-hai session close): run oh-hai bridge only if this run should have a new address',
  closed_by_operator: (pinned) =>
    `a human closed it (the operator kill-switch): do not re-run and do not start a replacement session until a human lifts the stop; ${
      pinned
        ? 'the pinned session stays closed after the lift: then clear or repoint --session / MA2H_SESSION_ID'
        : 'the first oh-hai bridge after the lift registers a new session by itself'
    }`,
};

export function judgeSession(facts: Pick<BridgeFacts, 'session' | 'spooled' | 'consumer' | 'dir'>, hub: HubSession, nowMs: number): Check {
  const name = 'bridge session';
  const local = facts.session;
  if (local.state === 'absent') {
    if (facts.consumer.state === 'ok' && facts.consumer.value.state === 'starting') {
      return check(name, 'warn', 'the connection is starting and has not recorded a session yet', { fix: 'run oh-hai doctor --self-test again in a moment' });
    }
    return check(name, 'fail', 'this bridge has no session recorded (the connection never registered one)', { fix: RELAUNCH });
  }
  if (local.state === 'unreadable') {
    return check(name, 'warn', `the session record exists and could not be read (${local.reason}): which session this bridge holds is unknown`, {
      fix: UNKNOWN_FIX(facts.dir),
    });
  }
  const recorded = local.value;
  // Past a record the spool has moved on from, the session is the one it names (the Hub was asked about that one); its lease was never seen here.
  const spooled = facts.spooled;
  const s = { id: spooled?.id ?? recorded.id, address: spooled?.address ?? recorded.address, pinned: recorded.pinned };
  const measured = {
    session: s.id,
    address: s.address,
    renewed_age_ms: spooled ? null : Math.max(0, Math.round(nowMs - recorded.renewed_at)),
    state: null as string | null,
    expires_at: spooled ? null : recorded.expires_at,
  };
  const renewedHere = spooled
    ? `session.json still names ${recorded.id}, which the spool says ${s.id} replaced (its connection stopped before recording it): the next connection takes ${s.id} up`
    : `this machine last saw it renewed ${ago(nowMs, recorded.renewed_at)}`;
  if (!hub.asked) {
    return check(name, 'warn', `records ${s.id}; the Hub was not asked (${hub.why}), so its state is unknown; ${renewedHere}`, {
      fix: 'fix the check named above, then run oh-hai doctor --self-test again',
      measured,
    });
  }
  const r = hub.result;
  if (!r.ok) {
    if (r.failure.kind === 'http' && r.failure.code === 'session_not_found') {
      return check(name, 'fail', `the Hub has no session ${s.id} for this agent (${describeFailure(r.failure)})`, {
        fix: SESSION_FIX.lapsed!(s.pinned),
        measured,
      });
    }
    return check(name, 'warn', `records ${s.id}; asking the Hub failed (${describeFailure(r.failure)}), so its state is unknown; ${renewedHere}`, {
      fix: 'run oh-hai doctor --self-test again; if it repeats, check the hub check',
      measured,
    });
  }
  const hubSession = r.value;
  const hubMeasured = { ...measured, state: hubSession.state, expires_at: hubSession.expires_at };
  if (hubSession.state === 'active') {
    return check(
      name,
      'pass',
      `${s.id} is active at the Hub: expires ${hubSession.expires_at} (Hub's clock), last renewed ${hubSession.last_renewed_at} (Hub's clock); ${renewedHere}`,
      { measured: hubMeasured },
    );
  }
  const fix = SESSION_FIX[hubSession.state]!(s.pinned);
  return check(name, 'fail', `${s.id} is ${hubSession.state} at the Hub: ${s.address} no longer reaches this agent`, { fix, measured: hubMeasured });
}

export function judgeReader(facts: Pick<BridgeFacts, 'reader' | 'consumer' | 'dir'>, bound: Bound, probe: BridgeProbe): Check {
  const name = 'bridge reader';
  const boundText = `the unattended bound is ${bound.seconds} s (${bound.source})`;
  const measured = { unattended_max_seconds: bound.seconds, attending: false as boolean | null, unattended_ms: null as number | null, upper_bound: false };
  if (facts.reader.state === 'unreadable') {
    return check(name, 'warn', `the reader record exists and could not be read (${facts.reader.reason}): whether a reader attends is unknown`, {
      fix: UNKNOWN_FIX(facts.dir),
      measured: { ...measured, attending: null },
    });
  }
  const a = readerAttendance(facts.reader, probe);
  if (a.attending) {
    const r = facts.reader.state === 'ok' ? facts.reader.value : null;
    const detail = r
      ? `a reader attends: pid ${r.pid} on ${r.host}, heartbeat ${ago(probe.nowMs, r.heartbeat_at)}, inside the deadline it declared (${iso(r.deadline_at)}), started by pid ${r.starter_pid}, which still exists`
      : 'a reader attends';
    return check(name, 'pass', detail, { measured: { ...measured, attending: true } });
  }
  const consumer = facts.consumer;
  if (consumer.state === 'ok' && consumer.value.mode === 'direct') {
    return check(
      name,
      'warn',
      `no reader attends (${a.why}); the connection runs in direct mode, which has no unattended bound, so mail is spooled but nothing reads it`,
      {
        fix: "run oh-hai bridge --session <the unit's name> as the reader, and re-run it after every exit (process supervision is not reader attendance)",
        measured,
      },
    );
  }
  // A connection stopped by a stop class (a dead credential, the kill-switch, …) did not stop for
  // want of a reader: judging the bound would advise re-running, which that stop forbids.
  if (consumer.state === 'ok' && consumer.value.state === 'stopped' && !rerunRepairs(consumer.value.exit_code)) {
    const c = consumer.value;
    return check(
      name,
      'skip',
      `not judged: no reader attends (${a.why}), but the connection stopped with exit ${c.exit_code} (${c.stop_reason ?? 'no reason recorded'}), not for want of a reader — bridge consumer says what to do`,
      { measured },
    );
  }
  // The interval runs from the LATER of the reader's heartbeat (capped by its declared
  // deadline) and the connection's start. A reader that has since exited still attended
  // until its last beat: between two runs of oh-hai bridge its pid is gone, and that gap is
  // exactly what the bound measures.
  const marks: number[] = [];
  if (facts.reader.state === 'ok') marks.push(Math.min(facts.reader.value.heartbeat_at, facts.reader.value.deadline_at));
  if (consumer.state === 'ok') marks.push(consumer.value.started_at);
  if (marks.length === 0) {
    if (consumer.state === 'unreadable') {
      return check(
        name,
        'warn',
        `no reader attends (${a.why}), and the connection's record could not be read, so the unattended interval cannot be measured; ${boundText}`,
        {
          fix: UNKNOWN_FIX(facts.dir),
          measured: { ...measured, upper_bound: true },
        },
      );
    }
    return check(name, 'fail', `no reader attends (${a.why}) and no connection has run: nothing keeps this bridge's address`, { fix: RELAUNCH, measured });
  }
  const since = Math.max(...marks);
  const idleMs = Math.max(0, probe.nowMs - since);
  const idle = formatDuration(idleMs);
  const m = { ...measured, unattended_ms: Math.round(idleMs) };
  if (consumer.state === 'unreadable') {
    return check(
      name,
      'warn',
      `no reader attends (${a.why}); unattended for at most ${idle} — an upper bound, not a measurement: the connection's record could not be read, and its start may be later; ${boundText}`,
      { fix: UNKNOWN_FIX(facts.dir), measured: { ...m, upper_bound: true } },
    );
  }
  if (idleMs >= bound.seconds * 1000) {
    return check(
      name,
      'fail',
      `no reader has attended for ${idle} (${a.why}): past the bound, so the connection stops and the address lapses with its lease; ${boundText}`,
      {
        fix: 're-run oh-hai bridge promptly after every exit: a reader attends only inside the wait bound it declared',
        measured: m,
      },
    );
  }
  return check(name, 'pass', `no reader attends right now (${a.why}), but the bridge is inside the unattended bound: unattended for ${idle}; ${boundText}`, {
    measured: m,
  });
}

export function judgeUnread(facts: { unread: UnreadRead; dir: string }, bound: Bound, nowMs: number): Check {
  const name = 'bridge unread';
  const u = facts.unread;
  if (u.state === 'unreadable') {
    return check(name, 'warn', `${u.reason}: what is unread is unknown`, { fix: UNKNOWN_FIX(facts.dir), measured: { unread: null, overdue: null } });
  }
  const ages = u.receivedAt.map((t) => nowMs - Date.parse(t));
  const boundMs = bound.seconds * 1000;
  const overdue = ages.filter((a) => !(a < boundMs)).length;
  const oldest = u.receivedAt[0];
  const measured = {
    unread: u.receivedAt.length,
    overdue,
    cursor_seq: u.cursorSeq,
    last_seq: u.lastSeq,
    oldest_received_at: oldest ?? null,
    unattended_max_seconds: bound.seconds,
  };
  const rewound = u.rewound === null ? '' : ` (the cursor will be rewound: ${u.rewound})`;
  if (overdue > 0) {
    return check(
      name,
      'fail',
      `${overdue} of ${u.receivedAt.length} unread records have waited past the unattended bound (${bound.seconds} s, ${bound.source}); the oldest was received ${oldest} (${formatDuration(ages[0]!)} ago)${rewound}`,
      { fix: 'run oh-hai bridge to print them, and keep re-running it after every exit', measured },
    );
  }
  if (u.damaged !== null) {
    return check(name, 'warn', `the spool has a damaged line (${u.damaged}): records after it stay invisible until the connection's next start cuts it`, {
      fix: `read ${facts.dir}/bridge.log; the next connection start recovers the spool (what was cut was never acknowledged, so the Hub redelivers it)`,
      measured,
    });
  }
  if (u.receivedAt.length === 0) return check(name, 'pass', `nothing unread (the cursor is at seq ${u.cursorSeq} of ${u.lastSeq})${rewound}`, { measured });
  return check(
    name,
    'pass',
    `${u.receivedAt.length} unread, the oldest received ${oldest} (${formatDuration(ages[0]!)} ago) — inside the ${bound.seconds} s bound${rewound}`,
    { measured },
  );
}

/** The unattended bound the connection runs with (settings.json), else the one configuration gives. */
export function boundOf(facts: Pick<BridgeFacts, 'settings'>, configured: Bound): Bound {
  if (facts.settings.state === 'ok') return { seconds: facts.settings.value.unattended_max_seconds, source: "the connection's settings.json" };
  return configured;
}

/** The four checks, or one `bridge` line when there is nothing to check (stood down). */
export function judgeBridge(facts: BridgeFacts, hub: HubSession, configured: Bound, probe: BridgeProbe): Check[] {
  const record = facts.consumer;
  if (record.state === 'ok' && record.value.state === 'stopped' && record.value.exit_code === EXIT.stoodDown) {
    const c = record.value;
    const when = c.stopped_at === null ? '' : ` ${ago(probe.nowMs, c.stopped_at)}`;
    return [
      check('bridge', 'pass', `this agent session's bridge was stood down${when} (oh-hai session close, exit 15): no bridge for this agent session`, {
        measured: { entry: facts.dir, stood_down: true },
      }),
    ];
  }
  const bound = boundOf(facts, configured);
  return [judgeConsumer(facts, probe), judgeSession(facts, hub, probe.nowMs), judgeReader(facts, bound, probe), judgeUnread(facts, bound, probe.nowMs)];
}
