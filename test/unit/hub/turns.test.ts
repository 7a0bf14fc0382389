import { describe, expect, it } from 'vitest';
import { TurnBudget } from '../../../src/hub/server/turns.js';

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe("stream pages' byte budget per turn of the event loop", () => {
  it('grants what is left of the turn; a page that finds it spent waits for the next turn', async () => {
    const turns = new TurnBudget(100);
    const first = await turns.grant();
    expect(first.bytes).toBe(100);
    let second: number | null = null;
    void turns.grant().then((g) => (second = g.bytes));
    await Promise.resolve();
    expect(second).toBeNull();
    // The first page held 100 bytes: this turn is full, so the second waits for the next.
    await turns.settle(first, 100);
    await Promise.resolve();
    expect(second).toBeNull();
    await nextTurn();
    await nextTurn();
    expect(second).toBe(100);
    expect(turns.counts()).toEqual({ largest: 100, deferred: 1 });
  });

  it('lets the next page in during the same turn when a page gives back what it did not use', async () => {
    const turns = new TurnBudget(100);
    const first = await turns.grant();
    const second = turns.grant();
    await turns.settle(first, 30);
    const g = await second;
    expect(g).toEqual({ turn: first.turn, bytes: 70 });
    await turns.settle(g, 70);
    expect(turns.counts().largest).toBe(100);
  });

  it('always lets one page into an empty turn, whatever its size (a page holds at least one entry)', async () => {
    const turns = new TurnBudget(100);
    const g = await turns.grant();
    await turns.settle(g, 250);
    expect(turns.counts().largest).toBe(250);
    let next = false;
    void turns.grant().then(() => (next = true));
    await Promise.resolve();
    expect(next).toBe(false);
    await nextTurn();
    await Promise.resolve();
    expect(next).toBe(true);
  });

  it('a page read across turns (an asynchronous store) counts its bytes in the turn it is written in', async () => {
    const turns = new TurnBudget(100);
    const slow = await turns.grant();
    await nextTurn();
    await nextTurn();
    // This turn is another page's already: the slow page's 80 bytes wait for room.
    const other = await turns.grant();
    await turns.settle(other, 60);
    let written = false;
    void turns.settle(slow, 80).then(() => (written = true));
    await Promise.resolve();
    await Promise.resolve();
    expect(written).toBe(false);
    await nextTurn();
    await nextTurn();
    expect(written).toBe(true);
    expect(turns.counts().largest).toBe(80);
  });
});

describe('a page read a round trip away (PostgreSQL)', () => {
  it('holds no turn while it reads: the next page is let in at once, and the read is charged to the turn it is sent in', async () => {
    const turns = new TurnBudget(100);
    const away = turns.unheld();
    expect(away.bytes).toBe(100);
    // Another page is let in this turn while the read is under way.
    expect((await turns.grant()).bytes).toBe(100);
    let sent = false;
    const settling = turns.settle(away, 80).then(() => (sent = true));
    await Promise.resolve();
    // This turn is spent by the other page: the read's 80 bytes wait for the next.
    expect(sent).toBe(false);
    await nextTurn();
    await settling;
    expect(sent).toBe(true);
  });

  it('lets a page with nothing to send through a spent turn, and the pages behind it', async () => {
    const turns = new TurnBudget(100);
    const [empty, small] = [turns.unheld(), turns.unheld()];
    await turns.settle(turns.unheld(), 60);
    let done = 0;
    void turns.settle(empty, 0).then(() => (done += 1));
    void turns.settle(small, 30).then(() => (done += 1));
    await Promise.resolve();
    await Promise.resolve();
    // Both in this turn: the empty page costs nothing and the small one fits the 40 bytes left.
    expect(done).toBe(2);
    expect(turns.counts().deferred).toBe(0);
  });
});
