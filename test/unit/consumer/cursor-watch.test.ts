import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { watchCursorForRounds, type RoundPump } from '../../../src/consumer/cursor-watch.js';
import { CursorWriter, writeCursor } from '../../../src/spool/index.js';
import { waitFor } from '../../helpers/wait.js';

/** A pump whose rounds end when the test says: `requests` counts what the watch asked for. */
function heldPump() {
  let requests = 0;
  let round: { done: Promise<void>; end: () => void } | null = null;
  const pump: RoundPump = {
    request: () => {
      requests += 1;
      if (round !== null) return;
      let end = (): void => undefined;
      const done = new Promise<void>((r) => (end = r));
      round = { done, end };
    },
    settled: async () => round?.done,
  };
  return {
    pump,
    requests: () => requests,
    endRound: () => {
      const r = round;
      round = null;
      r?.end();
    },
  };
}

/** One turn of the event loop: a watch event already queued is handled before it ends. */
const turn = (): Promise<void> => new Promise((r) => setImmediate(r));

let dir = '';
let stop = (): void => undefined;
afterEach(() => {
  stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('the connection watching the cursor for ack rounds', () => {
  it('a burst of in-place steps during a round wakes it once, and the round after it covers them', async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'oh-hai-cursor-watch-'));
    writeCursor(dir, { seq: 0, offset: 0 });
    const p = heldPump();
    // A poll far beyond the test: only the watch's events count.
    stop = watchCursorForRounds(dir, p.pump, { pollMs: 3_600_000 });
    const reader = new CursorWriter(dir);
    reader.step({ seq: 1, offset: 10 });
    await waitFor(() => p.requests() === 1, { what: 'the first step to ask for a round' });
    // The reader prints on while the round is out, a turn of this event loop after each step (as the
    // connection, a process of its own, takes each event as it comes): each step an event a watch sees.
    for (let i = 2; i <= 40; i++) {
      reader.step({ seq: i, offset: i * 10 });
      await turn();
    }
    reader.commit();
    // The round ends; the watch is back and the cursor has moved since it closed: one more round.
    p.endRound();
    await waitFor(() => p.requests() >= 2, { what: 'the round after the burst' });
    expect(p.requests()).toBe(2);
    p.endRound();
    // Nothing moved during that one: the next request is the next step's.
    await Promise.resolve();
    writeCursor(dir, { seq: 41, offset: 410 });
    await waitFor(() => p.requests() >= 3, { what: 'the next step to ask for a round' });
    expect(p.requests()).toBe(3);
  });

  it('disposed, it asks for nothing more', async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'oh-hai-cursor-watch-'));
    writeCursor(dir, { seq: 0, offset: 0 });
    const p = heldPump();
    stop = watchCursorForRounds(dir, p.pump, { pollMs: 3_600_000 });
    writeCursor(dir, { seq: 1, offset: 10 });
    await waitFor(() => p.requests() === 1, { what: 'the step to ask for a round' });
    stop();
    writeCursor(dir, { seq: 2, offset: 20 });
    p.endRound();
    await Promise.resolve();
    expect(p.requests()).toBe(1);
  });
});
