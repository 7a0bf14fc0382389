import { validateEntry } from '../hub/contract/entry.js';
import { parseSpoolLine, spoolLine } from '../spool/index.js';
import { escapeUnsafe, escapeUnsafeLines } from '../util/escape.js';
import { entrySummary, type Labels } from './summary.js';

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
 * Runs what a woken reader runs for one record — the line found in the bytes read, its sum
 * and shape, the entry's contract check, the summary line, stdout's escaping of it
 * (src/cli/escaping-output.ts) — on a made-up record, in memory, before the reader sleeps. A
 * reader prints its first line in a fresh process, where each of these functions and regular
 * expressions runs for the first time: V8 compiles a function on its first call and a
 * regular expression on its first execution, then compiles the expression again to native
 * code on its second (~0.1 ms each for the contract's `\p{Cc}` and ISO-instant patterns).
 * Twice here moves that compilation from the wake to the wait: nothing is read, written or
 * printed, and what it computes is dropped (docs/performance.md "Push latency"). Returns the
 * last text it would have written (what a test checks the rehearsal reached).
 */
export function rehearseWake(raw: boolean, labels: Labels): string | null {
  let made: string | null = null;
  for (let round = 1; round <= 2; round++) {
    const line = spoolLine(round, REHEARSAL_ENTRY.created_at, {
      type: 'entry',
      session: 'sess_rehearsal',
      entry: REHEARSAL_ENTRY,
      signature: 'rehearsal',
    });
    const bytes = Buffer.from(`${line}\n`, 'utf8');
    const record = parseSpoolLine(bytes.toString('utf8', 0, bytes.indexOf(0x0a)));
    if (!record.ok || record.value.type !== 'entry') return null;
    if (raw) {
      made = escapeUnsafeLines(escapeUnsafe(line) + '\n');
      continue;
    }
    const entry = validateEntry(record.value.entry);
    if (!entry.ok) return null;
    made = escapeUnsafeLines(entrySummary({ seq: record.value.seq, entry: entry.value, possiblyBounced: null }, labels));
  }
  return made;
}
