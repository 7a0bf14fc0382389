import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ConnectBatcher, type BatchedConnect } from '../../../src/hub/server/connects.js';
import type { Param } from '../../../src/hub/server/sql.js';

// Each of N instances gets 1/N of a fleet's reconnects, so a batch gathers over the wait what one instance
// receives: at two instances and 10,000 streams (~167 connects a second each, one per ~6 ms) a 10 ms wait
// made twice one instance's statements (docs/deploy.md, session 19, idle11).
describe('ConnectBatcher: how long the first connect waits for others', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  const connect = (session: string): BatchedConnect => ({
    tokenHash: 'h',
    session,
    consumer: null,
    bound: { limit: 100, maxBytes: 1 << 20 },
    stream: null,
  });

  function batcher() {
    /** Per statement sent: the connects it renews. */
    const statements: number[] = [];
    const b = new ConnectBatcher(
      {
        onceTaken: async <T>(take: () => { sql: string; params: readonly Param[] }): Promise<T[]> => {
          const s = take();
          statements.push(s.sql === 'single' ? 1 : Number(s.params[1]) + 1);
          return [];
        },
      },
      () => ({ sql: 'single', params: [] }),
      () => undefined,
    );
    return { b, statements };
  }

  it('a connect made 20 ms after the first queued goes in its statement', async () => {
    const { b, statements } = batcher();
    const first = b.present(connect('s1'));
    await vi.advanceTimersByTimeAsync(20);
    const second = b.present(connect('s2'));
    await vi.advanceTimersByTimeAsync(50);
    await Promise.all([first, second]);
    expect(statements).toEqual([2]);
  });

  it('a connect alone still goes within the wait', async () => {
    const { b, statements } = batcher();
    const only = b.present(connect('s1'));
    await vi.advanceTimersByTimeAsync(40);
    expect(statements).toEqual([1]);
    await expect(only).resolves.toBeNull();
  });
});
