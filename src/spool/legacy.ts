import { closeSync, linkSync, openSync, readFileSync, statSync, unlinkSync, fsyncSync, writeSync } from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { fsyncDir, writeFileAtomic } from '../util/fs-durable.js';
import { fail, ok, type Result } from '../core/index.js';
import { NO_CURSOR, writeCursor, type Cursor } from './cursor.js';
import { Fields } from '../util/shape.js';
import { openLine, readLines } from './line.js';
import { hubOrigin } from './paths.js';
import { STATE_FILES, readRecord, writeRecord, type RecordRead, type SessionHistoryItem } from './records.js';
import { sealedSegments } from './segments.js';
import { parseSpoolRecord, spoolLine, type SpoolEntryRecord, type SpoolTransitionRecord } from './spool.js';

/**
 * A 0.9 per-directory bridge home and its adoption into a state dir: the file moves only
 * (docs/legacy-0.9.md). Deciding whether a home is live, stopping its connection and asking
 * the Hub belong to the caller (src/cli/resolve/adopt-legacy.ts); everything here is local.
 */

/** The 0.9 home, relative to the working directory it served. */
export const LEGACY_HOME = path.join('.oh-hai', 'bridge');

export const LEGACY_FILES = {
  session: 'session.json',
  spool: 'bridge.ndjson',
  cursor: 'cursor',
  consumerPid: 'consumer.pid',
  /** Ours, written into the 0.9 home: where it went. */
  marker: 'adopted.json',
} as const;

/** In the state dir: where its adopted home came from, and the `home` it keeps presenting to the Hub. */
export const ADOPTION_RECORD = 'adopted-0.9.json';

/** MA2H §12's grammar for an `MA2H-Consumer` value: anything else could not have been presented. */
const HOME_VALUE = /^[A-Za-z0-9._:-]{1,128}$/;

export interface LegacySession {
  id: string;
  address: string;
  name: string | null;
  hub: string;
  agent_id: string;
  /** The `home` the 0.9 connection presented in `MA2H-Consumer`. */
  home: string;
}

export interface LegacyHome {
  dir: string;
  session: LegacySession;
  /** consumer.pid, or null when absent (0.9 removed it on a clean stop) or not a pid. */
  consumerPid: number | null;
}

export function parseLegacySession(x: unknown): Result<LegacySession> {
  const f = new Fields(x, '0.9 session.json');
  const name = f.raw('name') === undefined ? null : f.strOrNull('name');
  const session = f.done<LegacySession>({
    id: f.str('id', /^[^\s#]+$/),
    address: f.str('address', /^agent:/),
    name,
    hub: f.str('hub', /./),
    agent_id: f.str('agent_id', /^[^\s#]+$/),
    home: f.str('home', HOME_VALUE),
  });
  if (!session.ok) return session;
  const origin = hubOrigin(session.value.hub);
  return origin.ok ? session : fail(`0.9 session.json field 'hub': ${origin.reason}`);
}

function readText(file: string): string | null {
  try {
    return readFileSync(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw e;
  }
}

/** The 0.9 home's session and connection pid; a home whose session cannot be read is not adoptable. */
export function readLegacyHome(dir: string): Result<LegacyHome> {
  const read = readRecord(dir, LEGACY_FILES.session, parseLegacySession);
  if (read.state !== 'ok') return fail(read.state === 'absent' ? `${path.join(dir, LEGACY_FILES.session)} does not exist` : read.reason);
  let pidText: string | null;
  try {
    pidText = readText(path.join(dir, LEGACY_FILES.consumerPid));
  } catch (e) {
    return fail(`cannot read ${path.join(dir, LEGACY_FILES.consumerPid)}: ${(e as Error).message}`);
  }
  const pid = pidText !== null && /^\s*\d+\s*$/.test(pidText) ? Number(pidText.trim()) : null;
  return ok({ dir, session: read.value, consumerPid: pid !== null && Number.isSafeInteger(pid) && pid > 0 ? pid : null });
}

/** The 0.9 spool carried over: re-sequenced from 1 in the current record format, with the cursor mapped onto it. */
export interface ConvertedSpool {
  /** The new bridge.ndjson, byte for byte. */
  text: string;
  records: number;
  /** Records after the mapped cursor: what the next reader prints. */
  unread: number;
  cursor: Cursor;
  /** Sessions the 0.9 home moved away from (its address_changed records), oldest first. */
  history: SessionHistoryItem[];
  /** What was not carried over and why (a torn or damaged tail, an unreadable cursor), for the user. */
  notes: string[];
}

/** A record before it is sealed: the new line gets its own seq and sum. */
type Unsealed = Omit<SpoolEntryRecord, 'sum'> | Omit<SpoolTransitionRecord, 'sum'>;

/** A 0.9 spool line without `type` or `sum` (docs/legacy-0.9.md), or a line already in the current format. */
function parseLegacyLine(text: string): Result<Unsealed> {
  const line = text.endsWith('\r') ? text.slice(0, -1) : text;
  if (/,"sum":"[0-9a-f]{8}"\}$/.test(line)) {
    const opened = openLine(line);
    if (!opened.ok) return opened;
    return parseSpoolRecord(opened.value);
  }
  let json: unknown;
  try {
    json = JSON.parse(line);
  } catch {
    return fail('the line is not JSON');
  }
  const f = new Fields(json, '0.9 spool record');
  const seq = f.int('seq', 1);
  const received_at = f.str('received_at', /./);
  if (f.raw('event') === undefined) {
    const entry = new Fields(f.raw('entry'), '0.9 spool record entry');
    entry.str('id', /./);
    const checked = entry.done(null);
    if (!checked.ok) return checked;
    return f.done<Unsealed>({
      seq,
      type: 'entry',
      received_at,
      session: f.str('session', /./),
      entry: f.raw('entry') as SpoolEntryRecord['entry'],
      signature: f.str('signature', /./),
    });
  }
  return f.done<Unsealed>({
    seq,
    type: 'transition',
    received_at,
    event: f.oneOf('event', ['address_changed']),
    from_session: f.str('from_session', /./),
    to_session: f.str('to_session', /./),
    from_address: f.str('from_address', /./),
    to_address: f.str('to_address', /./),
    reason: f.str('reason', /./),
  });
}

/** The seq of the last record the 0.9 reader printed; an unreadable cursor counts as none (re-print, never skip). */
function readLegacyCursor(dir: string, notes: string[]): number {
  const file = path.join(dir, LEGACY_FILES.cursor);
  const text = readText(file);
  if (text === null) return 0;
  if (/^\s*\d+\s*$/.test(text)) return Number(text.trim());
  notes.push(`the 0.9 cursor ${file} is not a sequence number, so every carried-over record counts as unread (some may print a second time)`);
  return 0;
}

/**
 * Read the 0.9 spool and cursor and produce the new spool. Records keep their order, their
 * received_at and their bytes of entry and signature; only seq is new. The walk stops at the
 * first line that is not a record with a higher seq than the last: what follows was never
 * acknowledged unless the 0.9 reader had printed it, so the Hub still holds anything unread.
 */
export function convertLegacySpool(dir: string, currentSession: string): ConvertedSpool {
  const notes: string[] = [];
  const file = path.join(dir, LEGACY_FILES.spool);
  const cursorSeq = readLegacyCursor(dir, notes);
  const lines: string[] = [];
  const history: SessionHistoryItem[] = [];
  let lastOld = 0;
  let end = 0;
  let bytes = 0;
  let cursor: Cursor = { ...NO_CURSOR };
  let stop: string | null = null;
  for (const raw of readLines(file)) {
    const parsed = parseLegacyLine(raw.text);
    if (!parsed.ok || parsed.value.seq <= lastOld) {
      stop = `byte ${raw.start}: ${parsed.ok ? `seq ${parsed.value.seq} does not follow ${lastOld}` : parsed.reason}`;
      break;
    }
    const r = parsed.value;
    lastOld = r.seq;
    end = raw.end;
    const seq = lines.length + 1;
    const line = spoolLine(seq, r.received_at, r);
    lines.push(line + '\n');
    bytes += Buffer.byteLength(line, 'utf8') + 1;
    if (r.seq <= cursorSeq) cursor = { seq, offset: bytes };
    if (r.type === 'transition' && r.from_session !== currentSession && !history.some((h) => h.id === r.from_session)) {
      const at = Date.parse(r.received_at);
      history.push({ id: r.from_session, address: r.from_address, replaced_at: Number.isFinite(at) ? at : 0, reason: r.reason });
    }
  }
  let size = 0;
  try {
    size = statSync(file).size;
  } catch {
    // no spool: nothing was ever spooled in the 0.9 home
  }
  if (size > end) {
    notes.push(
      `${size - end} bytes at the end of ${file} were not carried over (${stop ?? `byte ${end}: a line without its newline (torn write)`}); ` +
        'anything unread there was never acknowledged, so the Hub delivers it again',
    );
  }
  return { text: lines.join(''), records: lines.length, unread: lines.length - cursor.seq, cursor, history, notes };
}

/** Is there anything in the entry's spool (any segment)? Adoption never merges into a spool that holds records. */
export function stateDirSpoolEmpty(stateDirPath: string): boolean {
  if (sealedSegments(stateDirPath).length > 0) return false;
  try {
    return statSync(path.join(stateDirPath, STATE_FILES.spool)).size === 0;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return true;
    throw e;
  }
}

/** Replace the entry's spool with the converted one, atomically: a crash leaves none or all of it. */
export function writeAdoptedSpool(stateDirPath: string, converted: ConvertedSpool): void {
  writeFileAtomic(path.join(stateDirPath, STATE_FILES.spool), converted.text);
}

/** After the spool: a cursor never names records its spool does not hold yet. */
export function writeAdoptedCursor(stateDirPath: string, converted: ConvertedSpool): void {
  writeCursor(stateDirPath, converted.cursor);
}

/** The marker left in the 0.9 home: which entry took it, and whether that finished. */
export interface AdoptionMarker {
  into: string;
  session: string;
  state: 'started' | 'done';
  /** ISO, our clock. */
  started_at: string;
  done_at: string | null;
  note: string;
}

export function parseAdoptionMarker(x: unknown): Result<AdoptionMarker> {
  const f = new Fields(x, 'adoption marker');
  return f.done<AdoptionMarker>({
    into: f.str('into', /./),
    session: f.str('session', /./),
    state: f.oneOf('state', ['started', 'done']),
    started_at: f.str('started_at'),
    done_at: f.strOrNull('done_at'),
    note: f.str('note'),
  });
}

export const readAdoptionMarker = (legacyDir: string): RecordRead<AdoptionMarker> => readRecord(legacyDir, LEGACY_FILES.marker, parseAdoptionMarker);

export const markerNote = (into: string): string =>
  `This 0.9 oh-hai bridge home was adopted into the state entry ${into}: its session, spool and cursor continue there. ` +
  'Nothing here was deleted and nothing here is read any more; remove this directory when you no longer need it.';

/**
 * Take the 0.9 home for one entry: the marker is created complete or not at all (written to
 * a temp file, then hard-linked into place, which fails if a marker exists), so of two
 * agent sessions adopting at once exactly one wins. 'taken' means a marker was already there.
 */
export function claimLegacyHome(legacyDir: string, marker: AdoptionMarker): 'claimed' | 'taken' {
  const target = path.join(legacyDir, LEGACY_FILES.marker);
  const tmp = path.join(legacyDir, `.${LEGACY_FILES.marker}.${randomBytes(6).toString('hex')}.tmp`);
  const fd = openSync(tmp, 'wx', 0o600);
  try {
    const buf = Buffer.from(JSON.stringify(marker) + '\n', 'utf8');
    let off = 0;
    while (off < buf.length) off += writeSync(fd, buf, off, buf.length - off);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  try {
    linkSync(tmp, target);
    return 'claimed';
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') return 'taken';
    throw e;
  } finally {
    unlinkSync(tmp);
    fsyncDir(legacyDir);
  }
}

export function completeAdoptionMarker(legacyDir: string, marker: AdoptionMarker): void {
  writeRecord(legacyDir, LEGACY_FILES.marker, marker);
}

/** The entry's own note of what it adopted; its `home` outlives the adoption (see adoptedHome). */
export interface AdoptionRecord {
  from: string;
  session: string;
  home: string;
  records: number;
  /** Our clock, ms. */
  adopted_at: number;
}

export function parseAdoptionRecord(x: unknown): Result<AdoptionRecord> {
  const f = new Fields(x, 'adoption record');
  return f.done<AdoptionRecord>({
    from: f.str('from', /./),
    session: f.str('session', /./),
    home: f.str('home', HOME_VALUE),
    records: f.int('records'),
    adopted_at: f.num('adopted_at'),
  });
}

export function writeAdoptionRecord(stateDirPath: string, record: AdoptionRecord): void {
  writeRecord(stateDirPath, ADOPTION_RECORD, record);
}

/**
 * The `home` an entry that adopted a 0.9 home presents to the Hub: the 0.9 one, so the Hub
 * sees the same holder (a connect from another home while the 0.9 connection was seen in
 * the last minute is 409 session_held). Null for every other entry.
 */
export function adoptedHome(stateDirPath: string): string | null {
  const r = readRecord(stateDirPath, ADOPTION_RECORD, parseAdoptionRecord);
  return r.state === 'ok' ? r.value.home : null;
}
