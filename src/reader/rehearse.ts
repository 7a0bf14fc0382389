import { spoolLine, type SpoolItem } from '../spool/index.js';
import { escapeUnsafeLines } from '../util/escape.js';

/**
 * A message entry shaped like real mail: every field the contract checks when a line is
 * summarised (ids, a sender and an address with a session, an instant, an intent, text).
 */
const REHEARSAL_ENTRY = {
  id: 'ent_rehearsal',
  kind: 'message',
  from: 'agent:agt_rehearsal#sess_rehearsal',
  to: 'agent:agt_rehearsal#sess_rehearsal',
  created_at: '2026-01-01T00:00:00.000Z',
  thread_id: 'thr_rehearsal',
  message_id: 'msg_rehearsal',
  intent: 'notify',
  text: 'rehearsal',
} as const;

/**
 * How many times. V8 compiles a regular expression to native code on its second execution and
 * gives a function feedback (inline caches, object literals' boilerplates) from its 8th call:
 * with two rounds every property read of the wake went through V8's generic lookup (~0.05 M of
 * ~0.39 M instructions from wake to print; docs/performance.md "Push latency from the commit
 * (session 15…)"). More rounds (40) did not cut it further.
 */
const ROUNDS = 10;

/** What a wake runs for one record, given by the printer: its version checks, its own read and its own line. */
export interface WakeSteps {
  /**
   * The checks a wake makes before its lines, on the real files: whether session.json,
   * stood-down.json and the senders' directory cache changed (an lstat each, FileMemo.get).
   * They read a file only if it changed, as the wake would.
   */
  labels(): void;
  /** The records a read of `bytes` (a spool file in memory, first record seq 1) takes: SpoolReader.rehearseRead. */
  read(bytes: Buffer): readonly SpoolItem[];
  /** The line the printer writes for a record (before stdout's escaping). */
  line(item: SpoolItem): string;
}

/**
 * Runs what a woken reader runs for one record — the version checks of the files that label a
 * line, the walk of the bytes read, the line found in them, its sum, shape and seq, the entry's
 * contract check, the summary line, stdout's escaping of it (src/cli/escaping-output.ts) — on a
 * made-up record, in memory, before the reader sleeps. A reader prints its first line in a fresh
 * process, where each of these functions and regular expressions would otherwise run for the
 * first time (compiled, or run without feedback: see ROUNDS). Nothing is written or printed,
 * no file is read unless it changed, and what it computes is dropped (docs/performance.md "Push
 * latency"). Returns the last text it would have written (what a test checks the rehearsal reached).
 */
export function rehearseWake(steps: WakeSteps): string | null {
  const line = spoolLine(1, REHEARSAL_ENTRY.created_at, { type: 'entry', session: 'sess_rehearsal', entry: REHEARSAL_ENTRY, signature: 'rehearsal' });
  const bytes = Buffer.from(`${line}\n`, 'utf8');
  let made: string | null = null;
  for (let round = 1; round <= ROUNDS; round++) {
    steps.labels();
    const items = steps.read(bytes);
    if (items.length !== 1 || items[0]!.record.type !== 'entry') return null;
    made = escapeUnsafeLines(steps.line(items[0]!));
  }
  return made;
}
