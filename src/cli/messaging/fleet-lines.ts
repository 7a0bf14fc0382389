import { plain } from '../../reader/index.js';
import type { AnnotatedRow, FleetView } from './fleet-view.js';
import { formatTable, PLAIN, type TerminalFacts } from '../terminal/index.js';

function consumerWords(l: NonNullable<AnnotatedRow['local']>): string {
  if (l.consumer_alive === true) return `consumer live (pid ${l.consumer_pid ?? '?'})`;
  if (l.consumer_alive === false) return `consumer DEAD (${l.consumer_note ?? 'nothing drains it'})`;
  return 'consumer UNKNOWN';
}

function readerWords(l: NonNullable<AnnotatedRow['local']>): string {
  if (l.reader_attending === true) return 'reader attending';
  if (l.reader_attending === null) return 'reader unknown';
  return `reader not attending (${l.reader_note ?? 'no reader'})`;
}

function localWords(l: AnnotatedRow['local']): string {
  if (l === null) return 'no local state here';
  const lag = l.lag === null ? 'unread unknown (the spool or cursor could not be read)' : `${l.lag} unread`;
  const notes = [l.consumer_alive === null ? l.consumer_note : null, l.reader_attending === null ? l.reader_note : null].filter((n): n is string => n !== null);
  const why = notes.length > 0 ? ` — ${notes.join('; ')}` : '';
  return `home found · ${consumerWords(l)} / ${readerWords(l)} · ${lag}${why}`;
}

const who = (r: AnnotatedRow): string =>
  [r.agent_label !== null ? plain(r.agent_label) : null, r.name !== null ? `name ${plain(r.name)}` : null].filter((s) => s !== null).join(', ');
const renewed = (r: AnnotatedRow): string => (r.last_renewed_at !== null ? `, last renewed ${r.last_renewed_at}` : '');
const holder = (r: AnnotatedRow): string | null => (r.holder !== null ? `pid ${r.holder.pid} on ${plain(r.holder.host)}` : null);

/** One line per session: address, who, reachability, lease (the Hub's instants, verbatim), then the local annotation. */
function sessionLine(r: AnnotatedRow): string {
  const held = holder(r);
  return (
    `${plain(r.address)}${who(r) ? ` (${who(r)})` : ''} · ${r.reachability} · ${r.state}, lease expires ${r.expires_at}` +
    ` (Hub's clock${renewed(r)})${held !== null ? ` · held by ${held}` : ''} · ${localWords(r.local)}`
  );
}

/** The same as table cells for a terminal: a header, then one row per session. */
function sessionCells(rows: readonly AnnotatedRow[]): string[][] {
  return [
    ['ADDRESS', 'AGENT', 'REACHABILITY', 'STATE', 'LEASE EXPIRES', 'HELD BY', 'THIS HOST'],
    ...rows.map((r) => [
      plain(r.address),
      who(r) || '-',
      r.reachability,
      r.state,
      `${r.expires_at} (Hub's clock${renewed(r)})`,
      holder(r) ?? '-',
      localWords(r.local),
    ]),
  ];
}

/**
 * `oh-hai fleet ls --sessions`: on a terminal an aligned table (docs/terminal.md); in a pipe
 * (and to the MCP tool) the line per session it always printed.
 */
export function formatFleet(view: FleetView, facts: TerminalFacts = PLAIN): string {
  if (view.sessions.length === 0 && view.unmatched_local_entries.length === 0) {
    return "no live sessions in this account: nothing can be addressed by session right now (agent:<id> still reaches an agent's principal mailbox)\n";
  }
  const unmatched = view.unmatched_local_entries.map(
    (u) =>
      `local state entry ${u.entry}: its session record could not be read (${u.reason}); it may belong to any session above — this is not evidence that nothing runs there\n`,
  );
  const sessions =
    facts.tty && view.sessions.length > 0 ? formatTable(sessionCells(view.sessions), facts) : view.sessions.map((r) => sessionLine(r) + '\n').join('');
  return sessions + unmatched.join('');
}
