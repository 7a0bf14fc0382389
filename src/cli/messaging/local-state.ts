import type { Liveness } from '../../spool/index.js';
import { readerAttendance } from '../../consumer/index.js';
import {
  STATE_FILES,
  SpoolReader,
  listStateDirs,
  parseConsumerRecord,
  parseReaderRecord,
  parseSessionRecord,
  readCursorRecord,
  readRecord,
  type ProcessStamp,
} from '../../spool/index.js';

/**
 * What this host's state root says about one session: read off disk with no Hub call.
 * Every `null` is "the record exists and could not be read" — never "no" — because a
 * relaunch on a false "dead" changes a live session's address.
 */
export interface LocalAnnotation {
  entry: string;
  consumer: 'live' | 'dead' | 'unknown';
  /** Why the consumer is dead or unknown, in words; null when live. */
  consumer_note: string | null;
  consumer_pid: number | null;
  /** Our clock: how old the consumer's heartbeat is, when its record was read. */
  consumer_heartbeat_age_ms: number | null;
  reader_attending: boolean | null;
  reader_note: string | null;
  /** Unread records: the spool's last seq minus the cursor's; null when either could not be read. */
  lag: number | null;
}

export interface LocalScan {
  bySession: Map<string, LocalAnnotation>;
  /** Session entries whose session record exists and could not be read: they may belong to any row. */
  unmatched: { entry: string; reason: string }[];
}

export interface LocalProbe {
  nowMs: number;
  staleMs: number;
  liveness(stamp: ProcessStamp): Liveness;
}

function consumerState(dir: string, probe: LocalProbe): Pick<LocalAnnotation, 'consumer' | 'consumer_note' | 'consumer_pid' | 'consumer_heartbeat_age_ms'> {
  const read = readRecord(dir, STATE_FILES.consumer, parseConsumerRecord);
  if (read.state === 'absent') {
    return { consumer: 'dead', consumer_note: 'no consumer record: none has run here', consumer_pid: null, consumer_heartbeat_age_ms: null };
  }
  if (read.state === 'unreadable') {
    return {
      consumer: 'unknown',
      consumer_note: `the consumer record could not be read (${read.reason})`,
      consumer_pid: null,
      consumer_heartbeat_age_ms: null,
    };
  }
  const c = read.value;
  const base = { consumer_pid: c.pid, consumer_heartbeat_age_ms: Math.max(0, probe.nowMs - c.heartbeat_at) };
  if (c.state === 'stopped') {
    const why = c.stop_reason ?? 'no reason recorded';
    return { ...base, consumer: 'dead', consumer_note: `stopped with exit ${c.exit_code ?? '?'} (${why})` };
  }
  const alive = probe.liveness(c);
  if (alive === 'dead') return { ...base, consumer: 'dead', consumer_note: `pid ${c.pid} on ${c.host} no longer exists (it stopped without recording why)` };
  if (alive === 'unknown') {
    return { ...base, consumer: 'unknown', consumer_note: `pid ${c.pid} runs on ${c.host}, which this host cannot check` };
  }
  return { ...base, consumer: 'live', consumer_note: null };
}

function readerState(dir: string, probe: LocalProbe): Pick<LocalAnnotation, 'reader_attending' | 'reader_note'> {
  const read = readRecord(dir, STATE_FILES.reader, parseReaderRecord);
  if (read.state === 'unreadable') return { reader_attending: null, reader_note: `the reader record could not be read (${read.reason})` };
  const a = readerAttendance(read, probe);
  return a.attending ? { reader_attending: true, reader_note: null } : { reader_attending: false, reader_note: a.why };
}

function lag(dir: string): number | null {
  const cursor = readCursorRecord(dir);
  if (cursor.state === 'unreadable') return null;
  try {
    const last = new SpoolReader(dir).lastSeq();
    return Math.max(0, last - (cursor.state === 'ok' ? cursor.value.seq : 0));
  } catch {
    return null;
  }
}

/** What one state dir says about its connection, its reader and its lag. */
export function annotateStateDir(dir: string, probe: LocalProbe): LocalAnnotation {
  return { entry: dir, ...consumerState(dir, probe), ...readerState(dir, probe), lag: lag(dir) };
}

/** Scan the session entries of a state root and index them by their current session id. */
export function scanLocalState(root: string, probe: LocalProbe): LocalScan {
  const bySession = new Map<string, LocalAnnotation>();
  const unmatched: LocalScan['unmatched'] = [];
  for (const loc of listStateDirs(root)) {
    if (loc.leg !== 'session') continue;
    const session = readRecord(loc.dir, STATE_FILES.session, parseSessionRecord);
    if (session.state === 'absent') continue;
    if (session.state === 'unreadable') {
      unmatched.push({ entry: loc.dir, reason: session.reason });
      continue;
    }
    bySession.set(session.value.id, annotateStateDir(loc.dir, probe));
  }
  return { bySession, unmatched };
}
