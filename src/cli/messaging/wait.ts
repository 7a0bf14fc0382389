import type { HubClient, HubFailure } from '../../hub/client/index.js';
import type { Message } from '../../hub/contract/index.js';
import type { Timers } from '../../util/clock.js';
import { isTransient } from './failures.js';

/** How the wait ended, with the last message seen (the send's own answer if no poll succeeded). */
export type WaitEnd = { kind: 'answered' | 'ended' | 'timeout'; message: Message } | { kind: 'failure'; failure: HubFailure; message: Message };

export interface WaitOptions {
  waitMs: number;
  pollMs: number;
  clock: Timers;
  /** Told after every poll, answered or not: the MCP server turns each into a progress notification. */
  onPoll?: (poll: { n: number; message: Message; failure: HubFailure | null }) => void | Promise<void>;
  /** Ends the wait early (the MCP client cancelled the call): it ends as a timeout. */
  signal?: AbortSignal;
}

/**
 * Poll GET /v1/messages/:id (no ?wait=, as MCP's oh_hai_ask does) until the ask has a
 * response, ends without one (bounced, expired), or the wait runs out. A transient
 * failure is polled through; `first` is the message the send returned.
 */
export async function waitForResponse(client: HubClient, first: Message, opts: WaitOptions): Promise<WaitEnd> {
  const deadline = opts.clock.monotonic() + opts.waitMs;
  let last = first;
  let lastFailure: HubFailure | null = null;
  for (let n = 1; ; n++) {
    if (last.response !== null) return { kind: 'answered', message: last };
    if (last.state === 'bounced' || last.state === 'expired') return { kind: 'ended', message: last };
    const left = deadline - opts.clock.monotonic();
    if (left <= 0 || opts.signal?.aborted) return lastFailure ? { kind: 'failure', failure: lastFailure, message: last } : { kind: 'timeout', message: last };
    await opts.clock.sleep(Math.min(opts.pollMs, left), opts.signal);
    const r = await client.getMessage(first.id);
    if (r.ok) {
      last = r.value;
      lastFailure = null;
    } else if (isTransient(r.failure)) {
      lastFailure = r.failure;
    } else {
      return { kind: 'failure', failure: r.failure, message: last };
    }
    await opts.onPoll?.({ n, message: last, failure: lastFailure });
  }
}
