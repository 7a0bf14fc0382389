import type { Message } from '../../hub/contract/index.js';
import { NO_LABELS, plain, quoteText, UNTRUSTED, withLabel, type Labels } from '../../reader/index.js';
import { excerpt, formatTrack, priorMeaning, snapshotMeaning } from './format.js';
import { formatTable, PLAIN, type TerminalFacts } from '../terminal/index.js';

export type Direction = 'sent' | 'received';

/** What a message list says of one message once it was answered: where to read the answer. */
const answered = (m: Message): string => (m.response !== null ? ` · answered at ${m.response.at} (oh-hai messages show ${plain(m.id)})` : '');

/** One line per message: id, intent, the other party, the state, the track (the Hub's instants verbatim), an excerpt. */
export function listLine(m: Message, direction: Direction, labels: Labels = NO_LABELS): string {
  const other = direction === 'sent' ? `→ ${withLabel(m.to, labels)}` : `← ${withLabel(m.from, labels)}`;
  return `${plain(m.id)} · ${m.intent} ${other} · ${m.state} · ${formatTrack(m)}${answered(m)} · ${excerpt(m.text)}`;
}

/** The same as table cells for a terminal: a header, then one row per message. */
function listCells(messages: readonly Message[], direction: Direction, labels: Labels): string[][] {
  const rows = messages.map((m) => [
    plain(m.id),
    m.intent,
    withLabel(direction === 'sent' ? m.to : m.from, labels),
    m.state,
    `${formatTrack(m)}${answered(m)}`,
    excerpt(m.text),
  ]);
  return [['MESSAGE', 'INTENT', direction === 'sent' ? 'TO' : 'FROM', 'STATE', 'TRACK', 'TEXT'], ...rows];
}

/**
 * `oh-hai messages list`: on a terminal an aligned table (docs/terminal.md); in a pipe the
 * line per message it always printed, which scripts and agents already parse.
 */
export function listText(
  messages: readonly Message[],
  direction: Direction,
  next: string | null,
  labels: Labels = NO_LABELS,
  facts: TerminalFacts = PLAIN,
): string {
  if (messages.length === 0) return direction === 'sent' ? 'nothing sent yet from this agent\n' : 'nothing received yet by this agent\n';
  const older = next === null ? '' : `(older messages: oh-hai messages list${direction === 'received' ? ' --received' : ''} --before ${plain(next)})\n`;
  if (facts.tty) return formatTable(listCells(messages, direction, labels), facts) + older;
  return messages.map((m) => listLine(m, direction, labels) + '\n').join('') + older;
}

export function showText(m: Message, labels: Labels = NO_LABELS): string {
  const state = m.prior !== null && (m.state === 'bounced' || m.state === 'expired') ? `${m.state} (${priorMeaning(m.prior)})` : m.state;
  const lines = [
    `message ${plain(m.id)} · ${m.intent}`,
    `from: ${withLabel(m.from, labels)}`,
    `to: ${withLabel(m.to, labels)}`,
    `created: ${m.created_at} (Hub's clock)`,
    `state: ${state}`,
    `track: ${formatTrack(m)}`,
    `destination when sent: ${m.destination ? `${plain(m.destination.address)} — ${snapshotMeaning(m.destination.snapshot)}` : 'not recorded'}`,
  ];
  if (m.in_reply_to !== null) lines.push(`in reply to: ${plain(m.in_reply_to)}`);
  lines.push(
    m.response !== null
      ? `response: ${plain(m.response.message_id)} at ${m.response.at} · ${UNTRUSTED}: ${quoteText(m.response.text)}`
      : m.intent === 'ask' || m.intent === 'task'
        ? 'response: none yet'
        : 'response: none expected',
  );
  lines.push(`text · ${UNTRUSTED}: ${quoteText(m.text)}`);
  return lines.join('\n') + '\n';
}
