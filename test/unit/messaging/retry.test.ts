import { describe, expect, it } from 'vitest';
import type { HubResult } from '../../../src/hub/client/index.js';
import { withRetries } from '../../../src/cli/messaging/retry.js';

const net: HubResult<string> = { ok: false, failure: { kind: 'network', message: 'ECONNRESET' } };
const http = (status: number, code: string, retryAfterSeconds: number | null = null): HubResult<string> => ({
  ok: false,
  failure: { kind: 'http', status, code, message: code, details: {}, retryAfterSeconds },
});
const okay: HubResult<string> = { ok: true, status: 202, value: 'queued', serverDate: null };

function script(results: HubResult<string>[]) {
  const calls: number[] = [];
  const sleeps: number[] = [];
  return {
    calls,
    sleeps,
    attempt: async (n: number) => {
      calls.push(n);
      return results[calls.length - 1] ?? results[results.length - 1]!;
    },
    opts: { retries: 3, backoffMinMs: 100, backoffMaxMs: 1000, sleep: async (ms: number) => void sleeps.push(ms) },
  };
}

describe('withRetries: transient failures are retried, a bounded number of times, refusals never', () => {
  it('retries the network, 5xx and 429 and returns the success', async () => {
    const s = script([net, http(503, 'unavailable'), http(429, 'rate_limited'), okay]);
    const r = await withRetries(s.attempt, s.opts);
    expect(r).toMatchObject({ ok: true, value: 'queued', attempts: 4 });
    expect(s.calls).toEqual([1, 2, 3, 4]);
    expect(s.sleeps).toHaveLength(3);
  });

  it('stops after the budget with the last failure', async () => {
    const s = script([http(502, 'http_502')]);
    const r = await withRetries(s.attempt, s.opts);
    expect(r.ok).toBe(false);
    expect(r.attempts).toBe(4);
    expect(s.calls).toHaveLength(4);
  });

  it('never retries a refusal: the answer would not change', async () => {
    for (const f of [http(404, 'recipient_not_found'), http(401, 'unauthorized'), http(409, 'idempotency_conflict'), http(410, 'session_lapsed')]) {
      const s = script([f, okay]);
      const r = await withRetries(s.attempt, s.opts);
      expect(r).toMatchObject({ ok: false, attempts: 1 });
      expect(s.sleeps).toEqual([]);
    }
  });

  it('waits at least what Retry-After asks', async () => {
    const s = script([http(429, 'rate_limited', 7), okay]);
    await withRetries(s.attempt, s.opts);
    expect(s.sleeps[0]).toBeGreaterThanOrEqual(7000);
  });
});
