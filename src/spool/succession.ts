import path from 'node:path';
import { linesBefore } from './line.js';
import { parseStoodDownRecord, readRecord, STATE_FILES, type RecordRead, type SessionRecord } from './records.js';
import { sealedSegments } from './segments.js';
import { parseSpoolLine, type SpoolTransitionRecord } from './spool.js';

/**
 * Which session replaced which, as the spool says. A connection spools an address change
 * before session.json names the new session, so one stopped in between leaves the spool a
 * step (or, stopped again the same way, several) ahead of session.json. Whoever asks which
 * session this entry holds — the next connection, or a command — starts where session.json
 * (or stood-down.json) leaves off and follows the spool from there: `succession`.
 */

/** The address_changed record the spool holds away from `session` (the later of two), or null. */
export type SuccessorOf = (session: string) => SpoolTransitionRecord | null;

/**
 * The address changes from `from` on: the one away from it, then the one away from the
 * session that one names, and so on; empty when the spool names no successor of `from`. Its
 * last names the session this entry holds (a cycle, which no connection spools, ends it).
 */
export function succession(from: string, successorOf: SuccessorOf): SpoolTransitionRecord[] {
  const chain: SpoolTransitionRecord[] = [];
  const seen = new Set<string>();
  for (let at = from; !seen.has(at);) {
    seen.add(at);
    const t = successorOf(at);
    if (t === null) break;
    chain.push(t);
    at = t.to_session;
  }
  return chain;
}

/**
 * The successors the spool's last records name — the address changes after its last other
 * record — read from its end, without the writer's lock and whatever the spool's size: a
 * command's `SuccessorOf`. They are all a walk from session.json can meet: an address change
 * is appended and then recorded in session.json, serialised with every other append, so what
 * was spooled since session.json last named a session is address changes, at the very end.
 * A torn final line is not a record (the connection's open cuts it).
 */
export function trailingSuccessors(dir: string): SuccessorOf {
  const successors = new Map<string, SpoolTransitionRecord>();
  for (const t of trailingTransitions(dir)) if (!successors.has(t.from_session)) successors.set(t.from_session, t);
  return (session) => successors.get(session) ?? null;
}

/** The spool's last records while they are address changes, last first: the current segment, then the sealed ones before it. */
function* trailingTransitions(dir: string): Generator<SpoolTransitionRecord, void, undefined> {
  for (const file of newestFirst(dir)) {
    for (const line of linesBefore(file)) {
      const r = parseSpoolLine(line.text);
      if (!r.ok || r.value.type !== 'transition') return;
      yield r.value;
    }
  }
}

/** The spool's files, newest first; the sealed ones are listed only when the current one holds nothing else. */
function* newestFirst(dir: string): Generator<string, void, undefined> {
  yield path.join(dir, STATE_FILES.spool);
  for (const s of sealedSegments(dir).reverse()) yield s.file;
}

/** A session the spool names past session.json's: its id and address, and why and when (our clock, ISO) the last change to it was spooled. */
export interface SpooledSession {
  id: string;
  address: string;
  reason: string;
  received_at: string;
}

/**
 * The session the spool names as `from`'s last successor — the one this entry's next
 * connection takes up — or null when it names none: what a command reports and stands down
 * in place of `from`, read from the spool's end.
 */
export function spooledSession(dir: string, from: string): SpooledSession | null {
  const last = succession(from, trailingSuccessors(dir)).at(-1);
  return last === undefined ? null : { id: last.to_session, address: last.to_address, reason: last.reason, received_at: last.received_at };
}

/** A session the spool names past another (`from`): session.json's, or the last one stood down. */
export interface SpooledPast {
  from: string;
  to: SpooledSession;
}

/**
 * After `oh-hai session close` removed session.json: the session the spool names past the last
 * session stood down here (stood-down.json), with that session's id — where a connection started
 * next takes up the entry, and what the commands attach to (access.ts). Null when none was stood
 * down or the spool names no successor of it.
 */
export function spooledPastStoodDown(dir: string): SpooledPast | null {
  const stood = readRecord(dir, STATE_FILES.stoodDown, parseStoodDownRecord);
  const last = stood.state === 'ok' ? stood.value.sessions.at(-1) : undefined;
  if (last === undefined) return null;
  const to = spooledSession(dir, last.id);
  return to === null ? null : { from: last.id, to };
}

/**
 * The session the spool names past session.json's (`session`, as read), or — session.json
 * removed by `oh-hai session close` — past the last session stood down. A pinned session is
 * never replaced, so nothing is spooled past one.
 */
export function spooledPastRecord(dir: string, session: RecordRead<SessionRecord>): SpooledPast | null {
  if (session.state === 'absent') return spooledPastStoodDown(dir);
  if (session.state !== 'ok' || session.value.pinned) return null;
  const to = spooledSession(dir, session.value.id);
  return to === null ? null : { from: session.value.id, to };
}
