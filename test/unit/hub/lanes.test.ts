import { describe, expect, it } from 'vitest';
import { type Lane, Lanes } from '../../../src/hub/server/lanes.js';

/** A caller that holds its connection until released; `admitted` turns true once it has one. */
function hold(lanes: Lanes, lane: Lane): { admitted: () => boolean; release: () => Promise<void> } {
  let admitted = false;
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  const done = lanes.run(lane, () => {
    admitted = true;
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
    const streams = [hold(lanes, 'stream'), hold(lanes, 'stream'), hold(lanes, 'stream'), hold(lanes, 'stream')];
    await settle();
    expect(streams.map((s) => s.admitted())).toEqual([true, true, false, false]);
    const requests = [hold(lanes, 'request'), hold(lanes, 'request')];
    await settle();
    expect(requests.every((r) => r.admitted())).toBe(true);
    expect(lanes.stats().request).toMatchObject({ waited: 0, heldMax: 2 });
    expect(lanes.stats().stream).toMatchObject({ held: 2, heldMax: 2, waiting: 2, waitingMax: 2, waited: 2 });
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

  it('hands a connection that comes free to a waiting request before waiting stream work', async () => {
    const lanes = new Lanes(3, 2);
    const a = hold(lanes, 'stream');
    const b = hold(lanes, 'request');
    const c = hold(lanes, 'request');
    await settle();
    // The pool is full: one stream caller and one request arrive, the stream caller first.
    const stream = hold(lanes, 'stream');
    const request = hold(lanes, 'request');
    await settle();
    expect([stream.admitted(), request.admitted()]).toEqual([false, false]);
    await b.release();
    await settle();
    expect([stream.admitted(), request.admitted()]).toEqual([false, true]);
    for (const x of [a, c, request, stream]) await x.release();
    expect(lanes.stats().request.waited).toBe(1);
  });

  it('keeps one connection for stream work however many requests wait, so pushes never starve behind sends', async () => {
    const lanes = new Lanes(3, 1);
    const requests = [hold(lanes, 'request'), hold(lanes, 'request'), hold(lanes, 'request')];
    await settle();
    expect(requests.map((r) => r.admitted())).toEqual([true, true, false]);
    const stream = hold(lanes, 'stream');
    await settle();
    expect(stream.admitted()).toBe(true);
    for (const x of [...requests, stream]) await x.release();
    expect(lanes.stats().request).toMatchObject({ held: 0, heldMax: 2, waited: 1 });
  });

  it('passes a failure through and frees the connection', async () => {
    const lanes = new Lanes(1, 1);
    await expect(lanes.run('request', () => Promise.reject(new Error('statement failed')))).rejects.toThrow('statement failed');
    await expect(lanes.run('stream', async () => 'next')).resolves.toBe('next');
    expect(lanes.stats().stream.held).toBe(0);
  });

  it('shares a pool of one connection in turn, requests first', async () => {
    const lanes = new Lanes(1, 1);
    const first = hold(lanes, 'stream');
    const stream = hold(lanes, 'stream');
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
});
