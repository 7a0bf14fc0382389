/**
 * The reconnect budget. Only genuine faults (network, 5xx, 429, a stream dropped mid-hold)
 * spend it; a hold-bound reconnect never does, and any round that made progress (a drain
 * answered, entries delivered, a whole hold) refills it — "at most max_retries" counts
 * consecutive failures, not failures over a lifetime. An `open` alone does not refill it.
 */
export interface BackoffPolicy {
  maxRetries: number;
  minMs: number;
  maxMs: number;
}

export type RetryDecision = { kind: 'wait'; delayMs: number; attempt: number } | { kind: 'exhausted'; attempts: number };

export class RetryBudget {
  private failures = 0;

  constructor(
    private readonly policy: BackoffPolicy,
    private readonly random: () => number = Math.random,
  ) {}

  /** Failures since the last success. */
  get spent(): number {
    return this.failures;
  }

  /**
   * A genuine fault happened. Exponential with full jitter: uniform in [0, min(max, min·2^n)),
   * floored at `retryAfterSeconds` when the Hub said how long to wait (429).
   */
  fault(retryAfterSeconds: number | null = null): RetryDecision {
    this.failures += 1;
    if (this.failures > this.policy.maxRetries) return { kind: 'exhausted', attempts: this.failures - 1 };
    const ceiling = Math.min(this.policy.maxMs, this.policy.minMs * 2 ** (this.failures - 1));
    const jittered = this.random() * ceiling;
    const floor = retryAfterSeconds !== null && retryAfterSeconds > 0 ? retryAfterSeconds * 1000 : 0;
    return { kind: 'wait', delayMs: Math.max(jittered, floor), attempt: this.failures };
  }

  succeeded(): void {
    this.failures = 0;
  }
}

/**
 * How long a stream opened while the connection retries must stay open before the record
 * stops saying it retries (consumer.ts streamOpened): longer than a Hub or balancer that
 * answers `open` and then drops the socket keeps it, short enough that a waiting reader says
 * "back" within seconds of a real recovery. Progress (new mail, a whole hold) says it at once.
 */
export const HELD_STREAM_MS = 2000;

/** The longest reason a consumer record keeps for a retry: a reader prints it in one stderr line. */
const REASON_MAX = 160;

/**
 * A fault's message as the consumer record keeps it while the connection retries: one short
 * line, with any URL's user-info (`https://user:pass@…`) cut, since the record is read by
 * every reader and printed on their stderr. `text` is already redacted of the credential.
 */
export function retryReason(text: string): string {
  const bare = text.replace(/\b([a-z][a-z0-9+.-]*:\/\/)[^/\s@]*@/gi, '$1').replace(/\s+/g, ' ');
  return bare.length <= REASON_MAX ? bare : `${bare.slice(0, REASON_MAX - 1)}…`;
}
