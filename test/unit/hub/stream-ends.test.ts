import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { StreamEnds } from '../../../src/hub/server/seen.js';
import type { Param, Store } from '../../../src/hub/server/sql.js';
import { openStore, sqliteStore } from '../../../src/hub/server/store.js';
import { fakeClock, systemClock } from '../../../src/util/clock.js';
import { FailureLog } from '../../../src/hub/server/failure-log.js';
import { waitFor } from '../../helpers/wait.js';

// A stream's end is written as one statement on its own (Store.once); on SQLite a statement with
// no RETURNING must run, not be read (it once failed there: "This statement does not return data").
// An end whose session connected meanwhile is not written (PostgreSQL: round-trips.test.ts).
const dirs: string[] = [];
const stores: Store[] = [];
afterAll(async () => {
  for (const s of stores) await s.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const loggedTo = (lines: string[]) =>
  new FailureLog({ work: 'stream_ends', what: "recording streams' ends", clock: systemClock, log: (l) => lines.push(l), counted: () => undefined });

async function withSessions(ids: string[]) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'oh-hai-stream-ends-'));
  dirs.push(dir);
  const clock = fakeClock(1_000);
  const store = sqliteStore(openStore(dir), {
    clock,
    wake: () => undefined,
    committed: () => undefined,
    effectFailed: (e) => {
      throw e;
    },
  });
  stores.push(store);
  await store.write(async (tx) => {
    for (const id of ids)
      await tx.run(
        `INSERT INTO sessions (id, agent_id, client_key, state, lease_seconds, expires_at, last_renewed_at, created_at, seen_at, holder_home, holder_seen_at)
         VALUES (?, 'agt_a', ?, 'active', 900, 901000, 1000, 1000, 1000, 'home-a', 1000)`,
        id,
        `k-${id}`,
      );
  });
  const seen = async (id: string) =>
    store.read.get<{ seen_at: number; holder_seen_at: number }>('SELECT seen_at, holder_seen_at FROM sessions WHERE id = ?', id);
  return { store, clock, seen };
}

/** `store` with every `once` statement's sessions noted, in order. */
function countedOnce(store: Store): { asked: string[][]; counted: Store } {
  const asked: string[][] = [];
  const counted: Store = Object.assign(Object.create(store) as Store, {
    async once<T>(sql: string, params: readonly Param[]): Promise<T[]> {
      asked.push([...new Set(params.filter((p): p is string => typeof p === 'string' && p.startsWith('s')))]);
      return store.once<T>(sql, params);
    },
  });
  return { asked, counted };
}

describe('StreamEnds on SQLite', () => {
  it("writes an end (the session, and its holder's stream) seen at the clock's now, and drops the end of a session that connected since", async () => {
    const { store, clock, seen } = await withSessions(['s1', 's2']);
    const logged: string[] = [];
    const ends = new StreamEnds(store, loggedTo(logged), 0);
    clock.advance(5_000);
    ends.record('s1', 'home-a');
    ends.record('s2', 'home-a');
    ends.connected('s2');
    await ends.drain();
    expect(logged).toEqual([]);
    expect(await seen('s1')).toEqual({ seen_at: 6_000, holder_seen_at: 6_000 });
    expect(await seen('s2')).toEqual({ seen_at: 1_000, holder_seen_at: 1_000 });
  });

  it('lets the ends recorded while a batch was being written wait for their reconnects too', async () => {
    const { store, seen } = await withSessions(['s1', 's2']);
    // Every write asked of the store (its sessions), and the first held until released.
    const asked: string[][] = [];
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let firstDone = false;
    const gated: Store = Object.assign(Object.create(store) as Store, {
      async once<T>(sql: string, params: readonly Param[]): Promise<T[]> {
        asked.push([...new Set(params.filter((p): p is string => typeof p === 'string' && p.startsWith('s')))]);
        if (asked.length === 1) await held;
        const rows = await store.once<T>(sql, params);
        firstDone = true;
        return rows;
      },
    });
    // Long enough that the reconnect below (a timer turn after the first write returned) comes inside it on a loaded machine.
    const ends = new StreamEnds(gated, loggedTo([]), 1_500);
    ends.record('s1', 'home-a');
    await waitFor(() => asked.length === 1 || null, { what: 'the first batch written' });
    ends.record('s2', 'home-a');
    release();
    await waitFor(() => firstDone || null, { what: 'the first batch returned' });
    // Before the fix, the batch of s2 was asked of the store in the same turn the first returned.
    ends.connected('s2');
    await ends.drain();
    expect(asked).toEqual([['s1']]);
    expect(await seen('s2')).toEqual({ seen_at: 1_000, holder_seen_at: 1_000 });
  });

  describe('with fake timers', () => {
    afterEach(() => vi.useRealTimers());

    /** s1 ended 1 s before the first batch (delay 1 s) and s2 100 ms before it: that batch has written s1 alone. */
    async function firstBatch() {
      const { store, seen } = await withSessions(['s1', 's2']);
      const { asked, counted } = countedOnce(store);
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setImmediate', 'performance'] });
      const ends = new StreamEnds(counted, loggedTo([]), 1_000);
      ends.record('s1', 'home-a');
      await vi.advanceTimersByTimeAsync(900);
      ends.record('s2', 'home-a');
      await vi.advanceTimersByTimeAsync(100);
      expect(asked).toEqual([['s1']]);
      return { ends, asked, seen };
    }

    it('leaves an end younger than a quarter of the delay to the next batch, so its reconnect drops it', async () => {
      const { ends, asked, seen } = await firstBatch();
      ends.connected('s2');
      const drained = ends.drain();
      await vi.advanceTimersByTimeAsync(2_000);
      await drained;
      expect(asked).toEqual([['s1']]);
      expect(await seen('s2')).toEqual({ seen_at: 1_000, holder_seen_at: 1_000 });
    });

    it('writes an end no reconnect dropped at the batch after the one it was too young for', async () => {
      const { ends, asked } = await firstBatch();
      // The next batch's delay starts once the first is written (its write may take a turn or so).
      await vi.advanceTimersByTimeAsync(1_500);
      expect(asked).toEqual([['s1'], ['s2']]);
      const drained = ends.drain();
      await vi.advanceTimersByTimeAsync(1_000);
      await drained;
    });
  });
});
