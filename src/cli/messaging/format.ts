import type { Message, MessageState, PriorState, Reachability } from '../../hub/contract/index.js';
import { quoteText } from '../../reader/index.js';

/**
 * What a destination snapshot means, in the product doc's words. `unknown` is "no presence
 * signal", never "down"; `offline` is "nothing draining right now", never "lost".
 */
export function snapshotMeaning(s: Reachability): string {
  switch (s) {
    case 'online':
      return 'online — a consumer drained or connected to that mailbox within the presence window';
    case 'offline':
      return 'offline — nothing is draining that mailbox right now; it is delivered when a consumer drains it';
    case 'unknown':
      return 'unknown — the Hub has no presence signal for that address (never drained or connected); that is not evidence it is down';
  }
}

/** `bounced`/`expired` carry how far the message got before it ended. */
export function priorMeaning(p: PriorState): string {
  return p === 'queued' ? 'prior: queued — never seen' : 'prior: delivered — seen but never confirmed';
}

const TERMINAL: readonly MessageState[] = ['acknowledged', 'bounced', 'expired'];

export const isTerminal = (s: MessageState): boolean => TERMINAL.includes(s);

/** The delivery track with the Hub's instants verbatim: `queued 2026-…Z → delivered 2026-…Z → …`. */
export function formatTrack(m: Message): string {
  const steps = m.track.map((t) => `${t.state} ${t.at}`);
  const track = steps.length > 0 ? steps.join(' → ') : `${m.state} (the Hub sent no track)`;
  return m.prior !== null && (m.state === 'bounced' || m.state === 'expired') ? `${track} (${priorMeaning(m.prior)})` : track;
}

/** Someone else's text as a quoted, escaped excerpt of at most `max` characters, on one line. */
export function excerpt(text: string, max = 60): string {
  const chars = [...text];
  return quoteText(chars.length > max ? chars.slice(0, max).join('') + '…' : text);
}
