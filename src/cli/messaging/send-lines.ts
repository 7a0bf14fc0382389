import type { Message } from '../../hub/contract/index.js';
import { plain, quoteText, UNTRUSTED } from '../../reader/index.js';
import { formatTrack, priorMeaning, snapshotMeaning } from './format.js';

/** Where answers to a send go: the attached session's mailbox, or the principal one and why. */
export type ReplyRoute = { kind: 'session'; address: string } | { kind: 'principal'; address: string; why: string };

/** A send's answer: `queued`, with the destination snapshot explained — never "delivered". */
export function queuedLines(m: Message, route: ReplyRoute, toLabel: string | null = null): string {
  const to = toLabel === null ? plain(m.to) : `${plain(m.to)} (${plain(toLabel)})`;
  const state = m.state === 'queued' ? 'queued' : `${m.state} (already; the Hub had this send from an earlier attempt)`;
  const lines = [
    `${state}: ${m.intent} ${plain(m.id)} to ${to} — accepted by the Hub; queued is not delivered, and delivered is not read`,
    `destination: ${m.destination ? snapshotMeaning(m.destination.snapshot) : 'the Hub sent no snapshot'}`,
  ];
  if (m.intent === 'ask' || m.intent === 'task') {
    lines.push(
      route.kind === 'session'
        ? `replies and receipts go to this agent session: ${plain(route.address)} (\`oh-hai bridge\` prints them)`
        : `replies and receipts go to your principal mailbox ${plain(route.address)}, because ${route.why}`,
    );
  }
  lines.push(`track it: oh-hai messages show ${plain(m.id)}`);
  return lines.join('\n') + '\n';
}

/** The end of `ask --wait`: the response, or why there is none yet — the message id to check later in every case. */
export function waitResultLine(m: Message, waitedFor: string): string {
  if (m.response !== null) {
    return (
      `response ${plain(m.response.message_id)} to your ask ${plain(m.id)} from ${plain(m.to)} at ${m.response.at}` +
      ` · ${UNTRUSTED}: ${quoteText(m.response.text)}\n`
    );
  }
  if (m.state === 'bounced' || m.state === 'expired') {
    const prior = m.prior !== null ? ` (${priorMeaning(m.prior)})` : '';
    return `no response: your ask ${plain(m.id)} ${m.state}${prior}; it will not be answered — track: ${formatTrack(m)}\n`;
  }
  return `no response within ${waitedFor}: your ask ${plain(m.id)} is ${m.state}; check later with: oh-hai messages show ${plain(m.id)}\n`;
}
