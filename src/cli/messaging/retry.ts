import type { HubResult } from '../../hub/client/index.js';
import { RetryBudget } from '../../consumer/index.js';
import { isTransient } from './failures.js';
import { systemClock, type Timers } from '../../util/clock.js';

/** A send is retried at most this many times after its first attempt, with the same idempotency key. */
export const SEND_RETRIES = 3;

export interface RetryOptions {
  retries: number;
  backoffMinMs: number;
  backoffMaxMs: number;
  /** Default: the system clock's (a unit test records the delays instead). */
  sleep?: Timers['sleep'];
  /** Told before each retry, e.g. to print a line on stderr. */
  onRetry?: (attempt: number, delayMs: number, why: string) => void;
}

/**
 * Run `attempt` until it succeeds, fails in a way a retry cannot fix, or the budget is
 * spent. The caller makes `attempt` idempotent (a send carries one key for all of them).
 */
export async function withRetries<T>(attempt: (n: number) => Promise<HubResult<T>>, opts: RetryOptions): Promise<HubResult<T> & { attempts: number }> {
  const budget = new RetryBudget({ maxRetries: opts.retries, minMs: opts.backoffMinMs, maxMs: opts.backoffMaxMs });
  const sleep = opts.sleep ?? systemClock.sleep;
  for (let n = 1; ; n++) {
    const r = await attempt(n);
    if (r.ok || !isTransient(r.failure)) return { ...r, attempts: n };
    const next = budget.fault(r.failure.kind === 'http' ? r.failure.retryAfterSeconds : null);
    if (next.kind === 'exhausted') return { ...r, attempts: n };
    const why = r.failure.kind === 'http' ? `${r.failure.status} ${r.failure.code}` : r.failure.message;
    opts.onRetry?.(n, next.delayMs, why);
    await sleep(next.delayMs);
  }
}
