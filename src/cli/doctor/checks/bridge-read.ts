import { lstatSync } from 'node:fs';
import {
  STATE_FILES,
  NO_CURSOR,
  parseConsumerRecord,
  parseConsumerSettings,
  parseReaderRecord,
  parseSessionRecord,
  readCursorRecord,
  readRecord,
  SpoolReader,
  spooledSession,
  validateCursor,
  type ConsumerRecord,
  type ConsumerSettings,
  type ReaderRecord,
  type RecordRead,
  type SessionRecord,
} from '../../../spool/index.js';

/**
 * Everything the bridge checks judge, read off the inspected state dir WITHOUT opening it:
 * openStateDir repairs modes and may log, and the consumer's spool open recovers the tail
 * and rewinds the cursor. Doctor uses only plain reads (records, the cursor, a SpoolReader),
 * so the entry's bytes and mtimes are the same after it as before.
 */

export type StateDirPresence = { state: 'absent' } | { state: 'present' } | { state: 'unreadable'; reason: string };

export function stateDirPresence(dir: string): StateDirPresence {
  try {
    const st = lstatSync(dir);
    if (st.isDirectory()) return { state: 'present' };
    return { state: 'unreadable', reason: `${dir} should be a state entry directory but is ${st.isSymbolicLink() ? 'a symbolic link' : 'not a directory'}` };
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return { state: 'absent' };
    return { state: 'unreadable', reason: `${dir} cannot be examined (${code ?? (e as Error).message})` };
  }
}

export type UnreadRead =
  | { state: 'unreadable'; reason: string }
  | {
      state: 'ok';
      /** The cursor as the reader will use it (validated; rewound, never advanced). */
      cursorSeq: number;
      lastSeq: number;
      /** Why the cursor would be rewound, or null. */
      rewound: string | null;
      /** A complete spool line that is not the next record (damage the connection cuts at its next start), or null. */
      damaged: string | null;
      /** received_at of every record after the cursor, oldest first (our clock, ISO). */
      receivedAt: string[];
    };

export interface BridgeFacts {
  dir: string;
  consumer: RecordRead<ConsumerRecord>;
  session: RecordRead<SessionRecord>;
  /**
   * The session the spool names past session.json's (a connection stopped after spooling the
   * address change and before recording it): the one the next connection takes up. Null when
   * none, and for a pinned session.
   */
  spooled: { id: string; address: string } | null;
  reader: RecordRead<ReaderRecord>;
  settings: RecordRead<ConsumerSettings>;
  unread: UnreadRead;
}

function readUnread(dir: string): UnreadRead {
  const cursor = readCursorRecord(dir);
  if (cursor.state === 'unreadable') return { state: 'unreadable', reason: `the cursor could not be read (${cursor.reason})` };
  try {
    const spool = new SpoolReader(dir);
    const scan = spool.scan();
    const valid = validateCursor(spool, cursor.state === 'ok' ? cursor.value : NO_CURSOR);
    const after = spool.readFrom(valid.cursor);
    return {
      state: 'ok',
      cursorSeq: valid.cursor.seq,
      lastSeq: scan.lastSeq,
      rewound: valid.rewound,
      damaged: scan.stop,
      receivedAt: after.map((i) => i.record.received_at),
    };
  } catch (e) {
    return {
      state: 'unreadable',
      reason: `the spool ${dir}/${STATE_FILES.spool} could not be read (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`,
    };
  }
}

/** The facts of the entry `dir`; `pinned` is the agent-session key's pinned session (the spool is not followed past one). */
export function readBridgeFacts(dir: string, pinned: string | null): BridgeFacts {
  const session = readRecord(dir, STATE_FILES.session, parseSessionRecord);
  return {
    dir,
    consumer: readRecord(dir, STATE_FILES.consumer, parseConsumerRecord),
    session,
    spooled: session.state === 'ok' && !session.value.pinned && pinned === null ? spooledSession(dir, session.value.id) : null,
    reader: readRecord(dir, STATE_FILES.reader, parseReaderRecord),
    settings: readRecord(dir, STATE_FILES.settings, parseConsumerSettings),
    unread: readUnread(dir),
  };
}
