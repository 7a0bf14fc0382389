import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type Lane, Lanes, PAGES_PER_CONNECT } from '../../../src/hub/server/lanes.js';
import { fuzzParameters } from '../../helpers/fuzz.js';

interface Held {
  admitted: () => boolean;
  release: () => Promise<void>;
}

/** A caller that holds its connection until released; `admitted` turns true once it has one (and `order` gets `name`). */
function hold(lanes: Lanes, lane: Lane, name: string = lane, order: string[] = []): Held {
  let admitted = false;
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  const done = lanes.run(lane, () => {
    admitted = true;
    order.push(name);
    return held;
  });
  return {
    admitted: () => admitted,
    release: async () => {
      release();
      await done;
    },
  };
}

const settle = async (): Promise<void> => {
  for (let i = 0; i < 5; i++) await Promise.resolve();
};

describe('the database pool lanes (stream work and requests)', () => {
  it('holds stream work to its share, so requests find the rest of the pool free', async () => {
    const lanes = new Lanes(4, 2);
    const streams = [hold(lanes, 'page'), hold(lanes, 'connect'), hold(lanes, 'page'), hold(lanes, 'page')];
    await settle();
    expect(streams.map((s) => s.admitted())).toEqual([true, true, false, false]);
    const requests = [hold(lanes, 'request'), hold(lanes, 'request')];
    await settle();
    expect(requests.every((r) => r.admitted())).toBe(true);
    expect(lanes.stats().request).toMatchObject({ waited: 0, heldMax: 2 });
    expect(lanes.stats().stream).toMatchObject({ held: 2, heldMax: 2, waiting: 2, waitingMax: 2, waited: 2 });
    expect(lanes.stats().page).toMatchObject({ held: 1, waiting: 2, waited: 2 });
    expect(lanes.stats().connect).toMatchObject({ held: 1, waiting: 0, waited: 0 });
    // A stream connection coming free goes to the next stream caller, in arrival order.
    await streams[0]!.release();
    await settle();
    expect(streams.map((s) => s.admitted())).toEqual([true, true, true, false]);
    for (const c of [...requests, streams[1]!, streams[2]!]) await c.release();
    await settle();
    expect(streams[3]!.admitted()).toBe(true);
    await streams[3]!.release();
    expect(lanes.stats().stream).toMatchObject({ held: 0, waiting: 0 });
  });

  it('hands a connection that comes free to stream work below its share before requests beyond theirs, so sends in flight do not squeeze pushes out', async () => {
    // Requests' own share is 4 − 2 = 2; they may borrow up to 3.
    const lanes = new Lanes(4, 2);
    const page = hold(lanes, 'page');
    const requests = [hold(lanes, 'request'), hold(lanes, 'request'), hold(lanes, 'request')];
    await settle();
    // The pool is full; ten more requests, then a page and a connect, wait.
    const queued = Array.from({ length: 10 }, () => hold(lanes, 'request'));
    const order: string[] = [];
    const waitingPage = hold(lanes, 'page', 'page', order);
    const connect = hold(lanes, 'connect', 'connect', order);
    await settle();
    // The first connection to come free is a request's (requests hold 3, their own share is 2): it goes to the page.
    await requests[0]!.release();
    await settle();
    expect(order).toEqual(['page']);
    expect(queued.some((r) => r.admitted())).toBe(false);
    // So does the next, a page's (stream work holds 1 of its 2): to the connect.
    await page.release();
    await settle();
    expect(order).toEqual(['page', 'connect']);
    expect(queued.some((r) => r.admitted())).toBe(false);
    expect(lanes.stats().streamBeforeRequests).toBe(2);
    // Stream work holds its share: the next connection to come free goes to a request.
    await requests[1]!.release();
    await settle();
    expect(queued.filter((r) => r.admitted())).toHaveLength(1);
    for (const x of [requests[2]!, waitingPage, ...queued, connect]) await x.release();
    expect(lanes.stats()).toMatchObject({ request: { held: 0, waiting: 0 }, stream: { held: 0, waiting: 0 } });
  });

  it('serves a page for open streams before the connects queued ahead of it, at most a few pages in a row while connects wait', async () => {
    // Stream work's share is ONE connection: every page and connect passes through it in turn.
    const lanes = new Lanes(3, 1);
    const order: string[] = [];
    const held: Held[] = [hold(lanes, 'connect', 'c0', order)];
    await settle();
    const CONNECTS = 8;
    for (let i = 1; i <= CONNECTS; i++) held.push(hold(lanes, 'connect', `c${i}`, order));
    await settle();
    // One page arrives behind eight connects: it is next.
    held.push(hold(lanes, 'page', 'p1', order));
    await settle();
    await held[0]!.release();
    await settle();
    expect(order).toEqual(['c0', 'p1']);
    expect(lanes.stats().pagesBeforeConnects).toBe(1);
    // Pages keep arriving: after PAGES_PER_CONNECT in a row the oldest connect goes, then pages again.
    const PAGES = 2 * PAGES_PER_CONNECT;
    for (let i = 2; i <= PAGES + 1; i++) held.push(hold(lanes, 'page', `p${i}`, order));
    await settle();
    // Release whoever holds the connection until everyone had it.
    const released = new Set<Held>([held[0]!]);
    for (let h = held.find((x) => x.admitted() && !released.has(x)); h; h = held.find((x) => x.admitted() && !released.has(x))) {
      released.add(h);
      await h.release();
      await settle();
    }
    expect(released.size).toBe(held.length);
    expect(order.slice(0, 2 + PAGES + 2)).toEqual(['c0', 'p1', 'p2', 'p3', 'p4', 'c1', 'p5', 'p6', 'p7', 'p8', 'c2', 'p9']);
    expect(order.slice(2 + PAGES + 2)).toEqual(['c3', 'c4', 'c5', 'c6', 'c7', 'c8']);
    expect(lanes.stats()).toMatchObject({ pagesBeforeConnects: PAGES + 1, page: { waited: PAGES + 1 }, connect: { waited: CONNECTS } });
  });

  it('keeps one connection for stream work however many requests wait, so pushes never starve behind sends', async () => {
    const lanes = new Lanes(3, 1);
    const requests = [hold(lanes, 'request'), hold(lanes, 'request'), hold(lanes, 'request')];
    await settle();
    expect(requests.map((r) => r.admitted())).toEqual([true, true, false]);
    const stream = hold(lanes, 'page');
    await settle();
    expect(stream.admitted()).toBe(true);
    for (const x of [...requests, stream]) await x.release();
    expect(lanes.stats().request).toMatchObject({ held: 0, heldMax: 2, waited: 1 });
  });

  it('passes a failure through and frees the connection', async () => {
    const lanes = new Lanes(1, 1);
    await expect(lanes.run('request', () => Promise.reject(new Error('statement failed')))).rejects.toThrow('statement failed');
    await expect(lanes.run('connect', async () => 'next')).resolves.toBe('next');
    expect(lanes.stats().stream.held).toBe(0);
  });

  it('shares a pool of one connection in turn, requests first', async () => {
    const lanes = new Lanes(1, 1);
    const first = hold(lanes, 'page');
    const stream = hold(lanes, 'page');
    const request = hold(lanes, 'request');
    await settle();
    expect([first.admitted(), stream.admitted(), request.admitted()]).toEqual([true, false, false]);
    await first.release();
    await settle();
    expect([stream.admitted(), request.admitted()]).toEqual([false, true]);
    await request.release();
    await settle();
    expect(stream.admitted()).toBe(true);
    await stream.release();
  });

  it('keeps its guarantees under any arrivals and releases', async () => {
    const step = fc.oneof(fc.record({ arrive: fc.constantFrom<Lane>('request', 'page', 'connect') }), fc.record({ release: fc.nat({ max: 40 }) }));
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 6 }), fc.integer({ min: 1, max: 6 }), fc.array(step, { maxLength: 80 }), async (max, streamMax, steps) => {
        const lanes = new Lanes(max, streamMax);
        const streamCap = Math.min(streamMax, max);
        const order: string[] = [];
        const holders: Array<Held & { lane: Lane; done: boolean }> = [];
        const check = () => {
          const s = lanes.stats();
          const total = s.request.held + s.stream.held;
          expect(total).toBeLessThanOrEqual(max);
          expect(s.stream.held).toBeLessThanOrEqual(streamCap);
          expect(s.request.held).toBeLessThanOrEqual(Math.max(1, max - 1));
          // Nobody waits while a connection its share may take is free.
          if (s.request.waiting > 0) expect(total === max || s.request.held === Math.max(1, max - 1)).toBe(true);
          if (s.stream.waiting > 0) expect(total === max || s.stream.held === streamCap).toBe(true);
          // A request waits only once requests fill their own share, never because of streams.
          if (s.request.waiting > 0) expect(s.request.held).toBeGreaterThanOrEqual(max - streamCap);
          // One connection is always there for stream work: it waits only behind stream work or a full pool it holds part of.
          if (s.stream.waiting > 0 && max > 1) expect(s.stream.held).toBeGreaterThanOrEqual(1);
        };
        for (const st of steps) {
          if ('arrive' in st) {
            const h = hold(lanes, st.arrive, st.arrive, order);
            holders.push(Object.assign(h, { lane: st.arrive, done: false }));
          } else {
            const live = holders.filter((h) => h.admitted() && !h.done);
            const h = live[st.release % Math.max(1, live.length)];
            if (h) {
              h.done = true;
              await h.release();
            }
          }
          await settle();
          check();
        }
        // Drain: everyone is served in the end.
        for (let live = holders.find((h) => h.admitted() && !h.done); live; live = holders.find((h) => h.admitted() && !h.done)) {
          live.done = true;
          await live.release();
          await settle();
          check();
        }
        expect(holders.every((h) => h.done)).toBe(true);
        expect(order).toHaveLength(holders.length);
      }),
      fuzzParameters(14_08, 200),
    );
  });
});
