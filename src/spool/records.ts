import path from 'node:path';
import { writeFileAtomic, type Durability } from '../util/fs-durable.js';
import { type Result } from '../core/index.js';
import { Fields } from '../util/shape.js';
import { NotRegularFileError, readStateBytes } from './safe-open.js';

/** The files of a state dir (docs/internals.md "The state dir"). */
export const STATE_FILES = {
  identity: 'identity.json',
  settings: 'settings.json',
  session: 'session.json',
  consumer: 'consumer.json',
  reader: 'reader.json',
  spool: 'bridge.ndjson',
  cursor: 'cursor.json',
  ledger: 'ledger.ndjson',
  seenJti: 'seen-jti.ndjson',
  log: 'bridge.log',
  consumerLock: 'consumer.lock',
  standDownRequest: 'stand-down-request.json',
  stoodDown: 'stood-down.json',
  reportedStop: 'reported-stop.json',
  readerDisplaced: 'reader-displaced.json',
} as const;

/**
 * A record read off disk. "unreadable" (permissions, garbage, a directory in its place)
 * is its own state: it must never be reported as "absent", which reads as "nothing there".
 */
export type RecordRead<T> = { state: 'absent' } | { state: 'unreadable'; reason: string } | { state: 'ok'; value: T };

export function readRecord<T>(dir: string, name: string, parse: (x: unknown) => Result<T>): RecordRead<T> {
  return readRecordBytes(dir, name, parse).read;
}

/** A state file's bytes as read, before they are parsed: absent, read, or failed (the error open or read gave). */
export type FileRead = { state: 'absent' } | { state: 'failed'; error: unknown } | { state: 'read'; bytes: Buffer };

/** A record and the bytes it was parsed from (null when none could be read), read once. */
export function readRecordBytes<T>(dir: string, name: string, parse: (x: unknown) => Result<T>): { read: RecordRead<T>; bytes: Buffer | null } {
  const file = path.join(dir, name);
  let got: FileRead;
  try {
    got = { state: 'read', bytes: readStateBytes(file) };
  } catch (e) {
    got = (e as NodeJS.ErrnoException).code === 'ENOENT' ? { state: 'absent' } : { state: 'failed', error: e };
  }
  return { read: parseRecordRead(file, got, parse), bytes: got.state === 'read' ? got.bytes : null };
}

/** A state file's bytes as the record `parse` makes of them; `file` names it in the reasons. */
export function parseRecordRead<T>(file: string, got: FileRead, parse: (x: unknown) => Result<T>): RecordRead<T> {
  if (got.state === 'absent') return { state: 'absent' };
  if (got.state === 'failed') {
    const e = got.error;
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return { state: 'absent' };
    if (e instanceof NotRegularFileError) return { state: 'unreadable', reason: e.message };
    if (code === 'EISDIR') return { state: 'unreadable', reason: `${file} is a directory, not a file` };
    if (code === 'EACCES' || code === 'EPERM') return { state: 'unreadable', reason: `${file} cannot be read (permission denied)` };
    return { state: 'unreadable', reason: `${file} cannot be read (${code ?? (e as Error).message})` };
  }
  const text = got.bytes.toString('utf8');
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return { state: 'unreadable', reason: `${file} is not valid JSON (${text.length} bytes)` };
  }
  const parsed = parse(json);
  return parsed.ok ? { state: 'ok', value: parsed.value } : { state: 'unreadable', reason: `${file}: ${parsed.reason}` };
}

/** Atomic replace, 0600, one JSON document with a trailing newline, as durable as `durability` says (fs-durable.ts). */
/** Returns the text written: what a later read's bytes are. */
export function writeRecord(dir: string, name: string, value: unknown, durability: Durability = 'durable'): string {
  const text = JSON.stringify(value) + '\n';
  writeFileAtomic(path.join(dir, name), text, 0o600, durability);
  return text;
}

export interface ProcessStamp {
  pid: number;
  host: string;
  /** /proc/<pid>/stat start ticks on Linux, `ps -o lstart=` on macOS, null where neither exists. */
  start_time: string | null;
}

export interface ConsumerRecord extends ProcessStamp {
  mode: 'auto' | 'direct';
  /** Our clock, ms since the epoch. */
  started_at: number;
  heartbeat_at: number;
  transport: 'sse' | 'poll' | null;
  /** The allow_from it enforces; null = none declared (fail closed). */
  policy: string[] | null;
  /** sha256 of the settings.json it started with. */
  settings_digest: string;
  state: 'starting' | 'running' | 'stopped';
  exit_code: number | null;
  /** e.g. 'session_closed_by_operator', 'unattended', 'replaced'. */
  stop_reason: string | null;
  stop_message: string | null;
  stopped_at: number | null;
  /**
   * While the connection waits out a Hub fault: the retry it is on, of how many, when it tries
   * (our clock, ms), when the first of these failures happened (our clock, ms) and the last
   * one's short reason (secrets stripped). Absent while connected. Read by a waiting reader (its
   * two stderr lines), its epilogue and its status line on a terminal. `since` and `reason` are
   * null in a record an older connection wrote.
   */
  retrying?: ConsumerRetrying;
}

export interface ConsumerRetrying {
  attempt: number;
  of: number;
  at: number;
  since: number | null;
  reason: string | null;
}

export interface ReaderRecord extends ProcessStamp {
  starter_pid: number;
  starter_start_time: string | null;
  started_at: number;
  heartbeat_at: number;
  /** started_at + (wait bound + grace) * 1000. */
  deadline_at: number;
  /** The key came from --session / env, not from the host program. */
  declared_identity: boolean;
}

/** A session this entry held before the current one (an unpinned lapse replaced it). */
export interface SessionHistoryItem {
  id: string;
  address: string;
  /** Our clock, ms: when this entry moved off it. */
  replaced_at: number;
  /** Why, e.g. 'session_lapsed'. */
  reason: string;
}

export interface SessionRecord {
  id: string;
  address: string;
  name: string | null;
  pinned: boolean;
  lease_seconds: number;
  /** The Hub's instant, verbatim; never subtracted from our clock. */
  expires_at: string;
  /** Our clock, ms: when we last saw the lease renewed. */
  renewed_at: number;
  /** Earlier sessions of this entry, oldest first. */
  history: SessionHistoryItem[];
}

/**
 * `oh-hai session close` asking one connection (by pid AND start time) to stand its session
 * down before it signals it: a SIGTERM with this request is a stand-down, without it a clean stop.
 */
export interface StandDownRequest extends ProcessStamp {
  /** Our clock, ms. */
  requested_at: number;
  /** How long the connection may spend on the Hub (last acks, the close): less than the requester waits. */
  budget_ms: number;
}

/** A session this entry stood down (closed at the Hub, id forgotten), kept until a new session replaces it. */
export interface StoodDownSession {
  id: string;
  address: string;
  /** What the Hub said when asked to close it. */
  hub_state: 'closed' | 'closed_by_operator' | 'lapsed' | 'not_found';
  /** The Hub's instant, verbatim; null when the Hub did not close it just now. */
  closed_at: string | null;
  /** Our clock, ms. */
  stood_down_at: number;
}

export interface StoodDownRecord {
  /** Oldest first. */
  sessions: StoodDownSession[];
}

/** Which stop of the connection this entry's readers have already relayed, so the next run starts afresh instead of repeating it. */
export interface ReportedStop {
  pid: number;
  start_time: string | null;
  stopped_at: number | null;
}

/**
 * The displacement notice. A reader that displaces a live one writes its predecessor's stamp
 * here before signalling it: the predecessor's heartbeat may have rewritten reader.json
 * between its check and its write, and without the notice it would read the SIGTERM as an
 * outside kill (143, "re-run") instead of a displacement (0, "nothing to re-run").
 */
export interface ReaderDisplaced {
  displaced: ProcessStamp;
  by: { pid: number; host: string };
}

export interface IdentityRecord {
  hub: string;
  agent_id: string;
  session_key: string;
  /** Where the agent-session key came from, e.g. '--session', 'MA2H_SESSION_ID', 'process'. */
  key_source: string;
  /** sess_… when the key pins a Hub session. */
  pinned: string | null;
  name: string | null;
}

export interface ConsumerSettings {
  hub: string;
  agent_id: string;
  session_key: string;
  pinned: string | null;
  name: string | null;
  /**
   * An unpinned --session / MA2H_SESSION_ID value: MA2H ids are opaque, so the connection asks
   * the Hub once whether it is a session of this agent (then pins it) before registering it as
   * a name. Absent in a file written before it existed: no candidate.
   */
  pin_candidate?: string | null;
  transport: 'auto' | 'sse' | 'poll';
  interval_seconds: number;
  max_retries: number;
  unattended_max_seconds: number;
  allow_from: string[] | null;
  agent: string | null;
  leg: 'session' | 'principal';
  /** `[bridge] retain_printed` when it is not the default; absent = the default (docs/spool.md). */
  retain_printed?: { records: number; days: number; bytes?: number };
}

function stamp(f: Fields): ProcessStamp {
  return { pid: f.int('pid', 1), host: f.str('host'), start_time: f.strOrNull('start_time') };
}

function parseRetrying(r: Fields): ConsumerRetrying {
  return {
    attempt: r.int('attempt'),
    of: r.int('of'),
    at: r.num('at'),
    since: r.raw('since') === undefined ? null : r.numOrNull('since'),
    reason: r.raw('reason') === undefined ? null : r.strOrNull('reason'),
  };
}

export function parseConsumerRecord(x: unknown): Result<ConsumerRecord> {
  const f = new Fields(x, 'consumer record');
  return f.done<ConsumerRecord>({
    ...stamp(f),
    mode: f.oneOf('mode', ['auto', 'direct']),
    started_at: f.num('started_at'),
    heartbeat_at: f.num('heartbeat_at'),
    transport: f.oneOfOrNull('transport', ['sse', 'poll']),
    policy: f.stringsOrNull('policy'),
    settings_digest: f.str('settings_digest'),
    state: f.oneOf('state', ['starting', 'running', 'stopped']),
    exit_code: f.intOrNull('exit_code'),
    stop_reason: f.strOrNull('stop_reason'),
    stop_message: f.strOrNull('stop_message'),
    stopped_at: f.numOrNull('stopped_at'),
    ...(f.raw('retrying') === undefined ? {} : { retrying: f.obj('retrying', parseRetrying) }),
  });
}

export function parseReaderRecord(x: unknown): Result<ReaderRecord> {
  const f = new Fields(x, 'reader record');
  return f.done<ReaderRecord>({
    ...stamp(f),
    starter_pid: f.int('starter_pid', 1),
    starter_start_time: f.strOrNull('starter_start_time'),
    started_at: f.num('started_at'),
    heartbeat_at: f.num('heartbeat_at'),
    deadline_at: f.num('deadline_at'),
    declared_identity: f.bool('declared_identity'),
  });
}

export function parseSessionRecord(x: unknown): Result<SessionRecord> {
  const f = new Fields(x, 'session record');
  return f.done<SessionRecord>({
    id: f.str('id', /./),
    address: f.str('address', /./),
    name: f.strOrNull('name'),
    pinned: f.bool('pinned'),
    lease_seconds: f.num('lease_seconds'),
    expires_at: f.str('expires_at'),
    renewed_at: f.num('renewed_at'),
    history: f.list('history', (h) => ({
      id: h.str('id', /./),
      address: h.str('address'),
      replaced_at: h.num('replaced_at'),
      reason: h.str('reason'),
    })),
  });
}

export function parseStandDownRequest(x: unknown): Result<StandDownRequest> {
  const f = new Fields(x, 'stand-down request');
  return f.done<StandDownRequest>({ ...stamp(f), requested_at: f.num('requested_at'), budget_ms: f.num('budget_ms') });
}

export function parseStoodDownRecord(x: unknown): Result<StoodDownRecord> {
  const f = new Fields(x, 'stood-down record');
  return f.done<StoodDownRecord>({
    sessions: f.list('sessions', (s) => ({
      id: s.str('id', /./),
      address: s.str('address', /./),
      hub_state: s.oneOf('hub_state', ['closed', 'closed_by_operator', 'lapsed', 'not_found']),
      closed_at: s.strOrNull('closed_at'),
      stood_down_at: s.num('stood_down_at'),
    })),
  });
}

export function parseReportedStop(x: unknown): Result<ReportedStop> {
  const f = new Fields(x, 'reported stop');
  return f.done<ReportedStop>({ pid: f.int('pid', 1), start_time: f.strOrNull('start_time'), stopped_at: f.numOrNull('stopped_at') });
}

export function parseReaderDisplaced(x: unknown): Result<ReaderDisplaced> {
  const f = new Fields(x, 'displacement notice');
  return f.done<ReaderDisplaced>({
    displaced: f.obj('displaced', stamp),
    by: f.obj('by', (b) => ({ pid: b.int('pid', 1), host: b.str('host') })),
  });
}

export function parseIdentityRecord(x: unknown): Result<IdentityRecord> {
  const f = new Fields(x, 'identity record');
  return f.done<IdentityRecord>({
    hub: f.str('hub', /./),
    agent_id: f.str('agent_id', /./),
    session_key: f.str('session_key', /./),
    key_source: f.str('key_source', /./),
    pinned: f.strOrNull('pinned', /./),
    name: f.strOrNull('name'),
  });
}

export function parseConsumerSettings(x: unknown): Result<ConsumerSettings> {
  const f = new Fields(x, 'settings.json');
  return f.done<ConsumerSettings>({
    hub: f.str('hub', /./),
    agent_id: f.str('agent_id', /./),
    session_key: f.str('session_key', /./),
    pinned: f.strOrNull('pinned', /./),
    name: f.strOrNull('name'),
    ...(f.raw('pin_candidate') === undefined ? {} : { pin_candidate: f.strOrNull('pin_candidate', /./) }),
    transport: f.oneOf('transport', ['auto', 'sse', 'poll']),
    interval_seconds: f.num('interval_seconds'),
    max_retries: f.int('max_retries'),
    unattended_max_seconds: f.num('unattended_max_seconds'),
    allow_from: f.stringsOrNull('allow_from'),
    agent: f.strOrNull('agent'),
    leg: f.oneOf('leg', ['session', 'principal']),
    ...(f.raw('retain_printed') === undefined
      ? {}
      : {
          retain_printed: f.obj('retain_printed', (r) => ({
            records: r.int('records'),
            days: r.num('days'),
            // Written since the byte bound: a settings.json without it keeps the default.
            ...(r.raw('bytes') === undefined ? {} : { bytes: r.int('bytes') }),
          })),
        }),
  });
}
