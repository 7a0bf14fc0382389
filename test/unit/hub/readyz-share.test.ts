import { describe, expect, it } from 'vitest';
import { healthWithin } from '../../../src/hub/server/admin.js';
import type { Store, StoreHealth } from '../../../src/hub/server/sql.js';
import { waitFor } from '../../helpers/wait.js';

// /readyz's health() under its deadline (admin.ts): checks share one that has not answered, so a
// store that does not answer gets no pile of them; and only for a while, so one stuck for good (a
// dead connection) does not hold /readyz at 503 once the store answers again.
describe('/readyz health within a deadline', () => {
  it('shares a waiting health() for shareMs, then asks again and answers with the new one', async () => {
    const answers: Array<(h: StoreHealth) => void> = [];
    const store = { health: () => new Promise<StoreHealth>((resolve) => answers.push(resolve)) } as unknown as Store;
    const shareMs = 300;
    const ready = healthWithin(store, 20, shareMs);
    const started = performance.now();
    const late = await Promise.all([ready(), ready(), ready()]);
    expect(late.map((h) => h.ok)).toEqual([false, false, false]);
    expect(late[0]!.reason).toMatch(/^the database did not answer within 20 ms \(its pool busy, or a table locked/);
    if (performance.now() - started < shareMs) expect(answers).toHaveLength(1);
    // The first never answers (a dead connection); once it is older than shareMs a check asks again.
    await waitFor(
      async () => {
        await ready();
        return answers.length >= 2;
      },
      { what: 'a second health() after shareMs' },
    );
    answers.at(-1)!({ ok: true, reason: null });
    expect(await ready()).toEqual({ ok: true, reason: null });
  });
});
