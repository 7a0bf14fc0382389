import type { Liveness } from '../spool/index.js';
import { EXIT, rerunRepairs } from '../core/index.js';
import { formatDuration } from '../util/duration.js';
import type { ConsumerRecord, RecordRead, SessionRecord } from '../spool/records.js';
import { retryState } from './consumer-watch.js';
import type { SpooledPast, SpooledSession } from '../spool/succession.js';

/**
 * The lease epilogue (product doc: "The lease epilogue"): read off the state dir with no
 * Hub call. Two facts are never merged: the Hub's instant, verbatim and labelled as
 * theirs, and our own elapsed time since the last renewal we saw. No "time remaining".
 */

export interface ConsumerView {
  record: RecordRead<ConsumerRecord>;
  /** Liveness of the recorded pid by start time; meaningful only when the record is ok. */
  alive: Liveness;
  /**
   * The connection this run started, while the record is not yet its own: until then the
   * record is its predecessor's, whose stop this run has already dealt with.
   */
  started?: { pid: number; host: string; alive: Liveness } | null;
}

/** The warning window: a third of the lease, capped at five minutes (900 s → 5m, 60 s → 20 s). */
export const warningWindowMs = (leaseSeconds: number): number => Math.min((leaseSeconds * 1000) / 3, 300_000);

type ConsumerState = 'running' | 'starting' | 'stopped' | 'dead' | 'unknown_host' | 'absent' | 'unreadable';

function consumerState(c: ConsumerView): ConsumerState {
  if (c.started) return c.started.alive === 'dead' ? 'dead' : 'starting';
  if (c.record.state !== 'ok') return c.record.state;
  if (c.record.value.state === 'stopped') return 'stopped';
  if (c.alive === 'dead') return 'dead';
  return c.alive === 'unknown' ? 'unknown_host' : 'running';
}

function consumerPart(c: ConsumerView): string {
  if (c.started)
    return `consumer pid ${c.started.pid} on ${c.started.host} (${c.started.alive === 'dead' ? 'not running' : 'started by this run; not recorded yet'})`;
  const r = c.record;
  if (r.state === 'absent') return 'no consumer record in this state entry';
  if (r.state === 'unreadable') return `consumer record unreadable (${r.reason})`;
  const who = `consumer pid ${r.value.pid} on ${r.value.host}`;
  switch (consumerState(c)) {
    case 'stopped':
      return `${who} (stopped: exit ${r.value.exit_code ?? '?'}, ${r.value.stop_reason ?? 'no reason recorded'})`;
    case 'dead':
      return `${who} (not running)`;
    case 'unknown_host':
      return `${who} (liveness unknown from this host)`;
    default:
      return who;
  }
}

/**
 * When two runs started a connection at once, one of the two consumers refused to start (the
 * lock was taken) and the record is the winner's. A run whose own start died while the record
 * shows a live, running consumer describes that one: it is the connection.
 */
function raceSettled(c: ConsumerView): ConsumerView {
  const lost = c.started?.alive === 'dead' && c.record.state === 'ok' && c.record.value.state !== 'stopped' && c.alive === 'alive';
  return lost ? { record: c.record, alive: c.alive } : c;
}

/** The session the spool names past session.json's (`spooledSession`, src/spool/succession.ts). */
export type SpooledLookup = (from: string) => SpooledSession | null;

/**
 * With session.json gone (`oh-hai session close` removed it): the session the spool names past
 * the last one stood down, and that one's id (`spooledPastStoodDown`). Null for a pinned key: a
 * pinned session is never replaced, and the next connection presents the pin.
 */
export type StoodDownLookup = () => SpooledPast | null;

/**
 * What the spool says replaced session.json's session, when it may say more than the record:
 * a connection spools an address change before session.json names the new session, so one
 * stopped in between (or the next, before it presents that session) leaves the record a step
 * behind — the session `session close` and `session status` name. When `session close` removed
 * session.json, the spool is followed from the session it stood down, as the commands follow it.
 * A healthy running connection records it as it spools it, so a warm run reads no spool for this.
 */
function spooledPast(
  session: RecordRead<SessionRecord>,
  consumer: ConsumerView,
  lookup: SpooledLookup | undefined,
  stoodDown: StoodDownLookup | undefined,
): SpooledPast | null {
  if (session.state === 'unreadable' || (session.state === 'ok' && session.value.pinned)) return null;
  const r = consumer.record;
  if (!consumer.started && r.state === 'ok' && r.value.state === 'running' && consumer.alive === 'alive') return null;
  // A kill-switch stop is about the session the connection presented, which session.json records
  // before it is presented: its line names that one, and says not to re-run.
  if (!consumer.started && r.state === 'ok' && r.value.state === 'stopped' && r.value.exit_code === EXIT.operatorClosed) return null;
  if (session.state === 'absent') return stoodDown?.() ?? null;
  const to = lookup?.(session.value.id) ?? null;
  return to === null ? null : { from: session.value.id, to };
}

/**
 * The lines (first: the lease; second, when warranted: the ⚠️ line) printed after the stop line.
 * `spooled` finds the session the spool names past session.json's, when a connection stopped
 * before recording it, and `stoodDown` the one past the session `oh-hai session close` stood
 * down, when it removed session.json: then that session is the one named.
 */
export function leaseEpilogue(
  name: string,
  session: RecordRead<SessionRecord>,
  view: ConsumerView,
  nowMs: number,
  spooled?: SpooledLookup,
  stoodDown?: StoodDownLookup,
): string[] {
  const consumer = raceSettled(view);
  const lines: string[] = [];
  const cons = consumerPart(consumer);
  const past = spooledPast(session, consumer, spooled, stoodDown);
  if (past !== null) {
    const at = Date.parse(past.to.received_at);
    const when = Number.isFinite(at) ? ` ${formatDuration(nowMs - at)} ago` : '';
    lines.push(
      `${name}: lease — ${past.to.id} (${past.to.address}), which replaced ${past.from}${when} (${past.to.reason}); ` +
        `no renewal of it is recorded here yet, so its expiry is unknown from here (oh-hai session status asks the Hub); ${cons}.`,
    );
    const warning = leaseWarning({ state: 'absent' }, consumer, nowMs, past.to);
    if (warning) lines.push(`${name}: ⚠️ ${warning}`);
    return lines;
  }
  if (session.state === 'ok') {
    const s = session.value;
    const elapsed = nowMs - s.renewed_at;
    lines.push(`${name}: lease — ${s.id} expires ${s.expires_at} (Hub's clock; last renewed ${formatDuration(elapsed)} ago); ${cons}.`);
  } else if (session.state === 'absent') {
    lines.push(`${name}: lease — no session recorded in this state entry yet; ${cons}.`);
  } else {
    lines.push(`${name}: lease — could not read the session record (${session.reason}); ${cons}.`);
  }
  const warning = leaseWarning(session, consumer, nowMs);
  if (warning) lines.push(`${name}: ⚠️ ${warning}`);
  return lines;
}

function leaseWarning(session: RecordRead<SessionRecord>, consumer: ConsumerView, nowMs: number, past: SpooledSession | null = null): string | null {
  const state = consumerState(consumer);
  const s = session.state === 'ok' ? session.value : null;
  const elapsed = s ? nowMs - s.renewed_at : 0;
  const leaseMs = s ? s.lease_seconds * 1000 : 0;
  const rerun = s?.pinned
    ? `clear or repoint --session / MA2H_SESSION_ID, then run oh-hai bridge (a pinned session that lapsed exits 11)`
    : `run oh-hai bridge again: the connection registers a new session and says the address changed`;

  const target = past ? past.id : s ? s.id : 'this agent session';
  const stoppedCode = !consumer.started && consumer.record.state === 'ok' ? consumer.record.value.exit_code : null;
  // A human's kill-switch is not a lapse to repair: the exit table says not to re-run, and so must
  // this line, before any lapse (a closed session's lease runs out too, and re-running is no cure).
  if (state === 'stopped' && stoppedCode === EXIT.operatorClosed) {
    const pid = consumer.record.state === 'ok' ? consumer.record.value.pid : '?';
    const after = s?.pinned
      ? `the pinned session stays closed after the lift: then clear or repoint --session / MA2H_SESSION_ID`
      : 'the first oh-hai bridge after the lift registers a new session (a new address) by itself';
    return `the background connection (pid ${pid}) stopped with exit 14: a human closed ${target} (the operator kill-switch). What to do: do not re-run and do not start a replacement session until a human lifts the stop; ${after}.`;
  }

  if (s && elapsed > leaseMs) {
    return (
      `lease certainly lapsed: nothing has renewed ${s.id} in ${formatDuration(elapsed)}, longer than its whole ` +
      `${formatDuration(leaseMs)} lease. Its address ${s.address} no longer receives mail; senders get a bounce. ` +
      `What to do: ${rerun}.`
    );
  }

  const lapses = s ? `it lapses once the Hub's clock passes ${s.expires_at}` : past ? 'it lapses when its lease runs out' : 'no address stays registered';
  switch (state) {
    case 'stopped':
    case 'dead': {
      const r = consumer.started ?? (consumer.record.state === 'ok' ? consumer.record.value : null);
      const what =
        state === 'stopped'
          ? `the background connection (pid ${r?.pid}) stopped with exit ${stoppedCode ?? '?'}`
          : `the background connection (pid ${r?.pid} on ${r?.host}) is not running and recorded no stop`;
      const todo = rerunRepairs(stoppedCode)
        ? 'run oh-hai bridge again: it starts a new connection that renews the lease'
        : 'follow the stop line above first; only a new oh-hai bridge run starts a connection again';
      return `${what}: nothing renews ${target}, so ${lapses}. What to do: ${todo}.`;
    }
    case 'absent':
      return `no background connection has recorded itself here: nothing renews ${target}, so ${lapses}. What to do: run oh-hai bridge again to start one.`;
    case 'starting':
      // It has not presented the session yet; renewing it is the first thing it does.
      return null;
    case 'unreadable':
      return (
        `could not read the background connection's record, so whether anything renews ${target} is unknown from here. ` +
        `Do not relaunch on this alone — a relaunch over a live connection changes the address; oh-hai session status asks the Hub.`
      );
    default:
      break;
  }

  const retrying = consumer.record.state === 'ok' ? consumer.record.value : null;
  if (retrying?.retrying) {
    const r = retrying.retrying;
    return (
      `the background connection (pid ${retrying.pid}) cannot reach the Hub and is retrying: ${retryState(r, nowMs)}. ` +
      `Nothing renews ${target} meanwhile, so ${lapses}; if all ${r.of} attempts fail the connection stops with exit 13. ` +
      `What to do: run oh-hai bridge again — it waits while the connection retries, and nothing is lost; if a run exits 13, re-run with your own backoff and escalate if it repeats.`
    );
  }

  if (s && elapsed > leaseMs - warningWindowMs(s.lease_seconds)) {
    const alive = consumer.record.state === 'ok' ? consumer.record.value : null;
    return (
      `lease inside its warning window: nothing has renewed ${s.id} in ${formatDuration(elapsed)} of its ` +
      `${formatDuration(leaseMs)} lease; if nothing renews it, ${lapses}. ` +
      `The connection (pid ${alive?.pid} on ${alive?.host}) has not renewed it: check bridge.log; oh-hai session status asks the Hub.`
    );
  }
  return null;
}
