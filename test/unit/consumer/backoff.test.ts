import { describe, expect, it } from 'vitest';
import { RetryBudget, retryReason } from '../../../src/consumer/backoff.js';

const policy = { maxRetries: 3, minMs: 1000, maxMs: 30_000 };

describe('RetryBudget', () => {
  it('grows the jitter ceiling exponentially from the floor to the cap', () => {
    const b = new RetryBudget({ maxRetries: 10, minMs: 1000, maxMs: 30_000 }, () => 0.999999);
    const delays = Array.from({ length: 7 }, () => b.fault());
    expect(delays.map((d) => (d.kind === 'wait' ? Math.round(d.delayMs) : -1))).toEqual([1000, 2000, 4000, 8000, 16_000, 30_000, 30_000]);
  });

  it('is full jitter: the delay is uniform from zero up to the ceiling', () => {
    const b = new RetryBudget(policy, () => 0);
    expect(b.fault()).toEqual({ kind: 'wait', delayMs: 0, attempt: 1 });
    const half = new RetryBudget(policy, () => 0.5);
    half.fault();
    expect(half.fault()).toEqual({ kind: 'wait', delayMs: 1000, attempt: 2 });
  });

  it('allows exactly maxRetries consecutive faults, then reports the budget spent', () => {
    const b = new RetryBudget(policy, () => 0.5);
    expect([b.fault().kind, b.fault().kind, b.fault().kind]).toEqual(['wait', 'wait', 'wait']);
    expect(b.fault()).toEqual({ kind: 'exhausted', attempts: 3 });
  });

  it('a successful connect refills the budget', () => {
    const b = new RetryBudget(policy, () => 0.5);
    b.fault();
    b.fault();
    b.fault();
    b.succeeded();
    expect(b.spent).toBe(0);
    expect(b.fault()).toEqual({ kind: 'wait', delayMs: 500, attempt: 1 });
  });

  it("honours a 429's retry-after as a floor under the jitter", () => {
    const b = new RetryBudget(policy, () => 0.1);
    expect(b.fault(7)).toEqual({ kind: 'wait', delayMs: 7000, attempt: 1 });
  });

  it('with a budget of zero the first fault is already too many', () => {
    expect(new RetryBudget({ ...policy, maxRetries: 0 }).fault()).toEqual({ kind: 'exhausted', attempts: 0 });
  });
});

describe('retryReason', () => {
  it("cuts a URL's user-info and keeps the rest of the reason on one short line", () => {
    expect(retryReason('drain: network error: GET https://user:s3cret@hub.example/v1/inbox failed\n  at x')).toBe(
      'drain: network error: GET https://hub.example/v1/inbox failed at x',
    );
    const long = retryReason(`HTTP 503 unavailable: ${'x'.repeat(400)}`);
    expect(long).toHaveLength(160);
    expect(long.endsWith('…')).toBe(true);
  });
});
