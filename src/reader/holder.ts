import type { Liveness } from '../spool/index.js';
import { formatDuration } from '../util/duration.js';
import type { ReaderRecord, RecordRead, SessionRecord } from '../spool/records.js';
import type { SpooledPast } from '../spool/succession.js';

/**
 * Another reader on this state dir: displace it, or refuse with exit 10 (product doc:
 * "Exit 10 names the holder — do not kill it"). Pure: every fact is gathered by the caller.
 */

export interface HolderFacts {
  record: RecordRead<ReaderRecord>;
  /** When the record file was last written (our clock, ms), or null when it could not be stat'ed. */
  writtenAt: number | null;
  /** The holder process by pid and start time. */
  alive: Liveness;
  /** The process that started the holder, by pid and start time. */
  starterAlive: Liveness;
  nowMs: number;
  staleMs: number;
}

export type DisplaceWhy = 'dead' | 'orphaned' | 'stale' | 'past_deadline' | 'declared' | 'unreadable_stale' | 'unreadable_declared';

export type HolderDecision =
  | { action: 'claim' }
  /** `signal`: the holder is a live process on this host — send it SIGTERM and let it finish. */
  | { action: 'displace'; why: DisplaceWhy; signal: boolean; pid: number | null }
  | { action: 'refuse' };

/**
 * The decision table. `declared`: this run's agent-session key came from --session or a
 * harness variable — the same agent re-running, which must never see 10. A key that came
 * only from the host program cannot tell two agents in that program apart, so a live,
 * attending holder there is a second agent and the answer is 10.
 */
export function decideHolder(f: HolderFacts, declared: boolean): HolderDecision {
  const r = f.record;
  if (r.state === 'absent') return { action: 'claim' };
  if (r.state === 'unreadable') {
    // The heartbeat rewrites the file, so its age bounds the holder's heartbeat age even unread.
    if (f.writtenAt !== null && f.nowMs - f.writtenAt > f.staleMs) return { action: 'displace', why: 'unreadable_stale', signal: false, pid: null };
    return declared ? { action: 'displace', why: 'unreadable_declared', signal: false, pid: null } : { action: 'refuse' };
  }
  const h = r.value;
  const local = f.alive === 'alive';
  const displace = (why: DisplaceWhy): HolderDecision => ({ action: 'displace', why, signal: local, pid: h.pid });
  if (f.alive === 'dead') return { action: 'displace', why: 'dead', signal: false, pid: h.pid };
  if (f.starterAlive === 'dead') return displace('orphaned');
  if (f.nowMs - h.heartbeat_at > f.staleMs) return displace('stale');
  if (f.nowMs > h.deadline_at) return displace('past_deadline');
  if (declared) return displace('declared');
  return { action: 'refuse' };
}

function leasePart(session: RecordRead<SessionRecord>, nowMs: number): string {
  if (session.state === 'absent') return 'no session recorded in this state entry yet';
  if (session.state === 'unreadable') return `its session record could not be read (${session.reason})`;
  const s = session.value;
  return `its session ${s.id} expires ${s.expires_at} (Hub's clock; last renewed ${formatDuration(nowMs - s.renewed_at)} ago)`;
}

export interface RefusalContext {
  facts: HolderFacts;
  session: RecordRead<SessionRecord>;
  /** The host program the key was derived from, e.g. `node pid 4100`. */
  keyFrom: string;
  readerPath: string;
}

const FIX = 'Do not kill it — it is what attends this mailbox. Give each agent its own --session <name>, or export MA2H_AGENT_SESSION_ID per agent.';

/** The exit-10 message for a reader refusal: names the holder, or says its record could not be read. */
export function readerRefusal(c: RefusalContext): string {
  const { facts: f } = c;
  const lease = leasePart(c.session, f.nowMs);
  const why = `This agent session's key came only from the host program (${c.keyFrom}), so two agents in it appear to share one agent session.`;
  if (f.record.state === 'ok') {
    const h = f.record.value;
    return (
      `another reader is attending this agent session: pid ${h.pid} on ${h.host}, holding for ${formatDuration(f.nowMs - h.started_at)}, ` +
      `heartbeat ${formatDuration(f.nowMs - h.heartbeat_at)} ago; ${lease}. ${why} ${FIX}`
    );
  }
  const reason = f.record.state === 'unreadable' ? f.record.reason : 'no record';
  const written = f.writtenAt !== null ? `, last written ${formatDuration(f.nowMs - f.writtenAt)} ago` : '';
  return (
    `another reader's record exists and could not be read (${reason}${written}), so its holder cannot be named from here — ` +
    `it may be live; ${lease}. ${why} ${FIX} If you are certain no other reader runs, remove ${c.readerPath}.`
  );
}

/** The exit-10 message when the consumer reports that another home already drains this session (it names the Hub's holder). */
/** `spooled`: the session the spool names past session.json's, which the connection had taken up (stop-outcome.ts). */
export function sessionHeldMessage(stopMessage: string | null, session: RecordRead<SessionRecord>, nowMs: number, spooled: SpooledPast | null = null): string {
  const held = stopMessage ?? `another home already drains this session (the connection recorded no holder details). ${FIX}`;
  const lease =
    spooled !== null
      ? `its session is ${spooled.to.id}, which replaced ${spooled.from} (${spooled.to.reason}; the spool records it, session.json not yet), with no renewal of it recorded here`
      : leasePart(session, nowMs);
  return `${held}; in this state entry, ${lease}`;
}
