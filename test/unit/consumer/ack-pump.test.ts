import { describe, expect, it } from 'vitest';
import { AckPump } from '../../../src/consumer/ack-pump.js';
import type { Acker } from '../../../src/consumer/acker.js';
import type { Stop } from '../../../src/consumer/stops.js';
import { LedgerWriteError, writeCursor } from '../../../src/spool/index.js';
import { ackWorld, type AckWorld } from './ack-world.js';

/** An AckPump over a real acker, with the consumer's side (commit, lock, stop) recorded. */
function pumpOver(w: AckWorld, opts: { commit?: () => void; lockHealthy?: () => boolean } = {}) {
  const stops: Stop[] = [];
  const logs: string[] = [];
  let commits = 0;
  const pump = new AckPump({
    acker: w.acker,
    commit: () => {
      commits += 1;
      opts.commit?.();
    },
    lockHealthy: opts.lockHealthy ?? (() => true),
    stopped: () => stops.length > 0,
    stopWith: (s) => stops.push(s),
    log: (t) => logs.push(t),
  });
  return { pump, stops, logs, commits: () => commits };
}

const LEDGER_FAILED = 'fsync of the ledger /state/ledger.ndjson failed: EIO: i/o error, fsync; not retried';

describe('AckPump', () => {
  it('a round commits, then acks', async () => {
    const w = ackWorld();
    const p = pumpOver(w);
    w.spoolEntries(['e1']);
    p.pump.request();
    await p.pump.settled();
    expect(p.commits()).toBe(1);
    expect(w.acks).toEqual([{ session: 'sess_a', delivered: ['e1'] }]);
    expect(p.stops).toEqual([]);
  });

  it('a failing commit stops with 1 (spool_write_failed) naming the failure, acks nothing, and runs no further round', async () => {
    const w = ackWorld();
    w.spoolEntries(['e1']);
    const p = pumpOver(w, {
      commit: () => {
        throw new LedgerWriteError('ledger_fsync_failed', LEDGER_FAILED);
      },
    });
    p.pump.request();
    p.pump.request(); // asked again while the failing round runs
    await p.pump.settled();
    expect(p.stops).toEqual([
      {
        exit: 1,
        reason: 'spool_write_failed',
        message: `${LEDGER_FAILED}. Not retried: nothing more is acked, and every entry not yet acknowledged stays at the Hub and is redelivered to the next consumer`,
      },
    ]);
    expect(w.acks).toEqual([]);
    p.pump.request();
    await p.pump.settled();
    expect(p.commits()).toBe(1);
    expect(p.stops).toHaveLength(1);
  });

  it('a compromised lock stops with lock_compromised before committing or acking', async () => {
    const w = ackWorld();
    w.spoolEntries(['e1']);
    const p = pumpOver(w, { lockHealthy: () => false });
    p.pump.request();
    await p.pump.settled();
    expect(p.stops.map((s) => [s.exit, s.reason])).toEqual([[1, 'lock_compromised']]);
    expect(p.commits()).toBe(0);
    expect(w.acks).toEqual([]);
  });

  it('a failed ack (a fault) is logged and retried on the next round, not a stop', async () => {
    const w = ackWorld();
    w.spoolEntries(['e1']);
    const p = pumpOver(w);
    w.answers.push({ failure: { kind: 'network', message: 'ECONNRESET' } });
    p.pump.request();
    await p.pump.settled();
    expect(p.stops).toEqual([]);
    expect(p.logs).toEqual(['ack delivered on sess_a: network error: ECONNRESET; the ack is retried on the next round']);
    p.pump.request();
    await p.pump.settled();
    expect(w.acks).toEqual([
      { session: 'sess_a', delivered: ['e1'] },
      { session: 'sess_a', delivered: ['e1'] },
    ]);
    expect(w.ledger.pending()[0]?.state).toBe('delivered');
  });

  it('an ack answered with a decision stops with it', async () => {
    const w = ackWorld();
    w.spoolEntries(['e1']);
    const p = pumpOver(w);
    w.answers.push({ failure: { kind: 'http', status: 403, code: 'session_closed_by_operator', message: 'closed', details: {}, retryAfterSeconds: null } });
    p.pump.request();
    await p.pump.settled();
    expect(p.stops.map((s) => [s.exit, s.reason])).toEqual([[14, 'session_closed_by_operator']]);
  });

  it('requests during a round coalesce into one more round; none after a stop', async () => {
    const w = ackWorld();
    const ends = w.spoolEntries(['e1', 'e2']);
    const p = pumpOver(w);
    p.pump.request();
    p.pump.request();
    p.pump.request();
    writeCursor(w.dir, { seq: 2, offset: ends[1]! });
    await p.pump.settled();
    expect(p.commits()).toBe(2);
    expect(w.acks).toEqual([
      { session: 'sess_a', delivered: ['e1', 'e2'] },
      { session: 'sess_a', acknowledged: ['e1', 'e2'] },
    ]);
    p.stops.push({ exit: 0, reason: 'signal', message: 'SIGTERM' });
    p.pump.request();
    await p.pump.settled();
    expect(p.commits()).toBe(2);
  });

  it('a request made just as the rounds finish is not folded into them and lost: it runs one more round', async () => {
    // Whatever the microtask a request comes in, after the first round's acks: the round it asks for runs.
    const lostAt: number[] = [];
    for (let depth = 0; depth < 12; depth++) {
      let rounds = 0;
      const acker = { flush: () => Promise.resolve({ ok: true }) } as unknown as Acker;
      const pump = new AckPump({
        acker,
        commit: () => void (rounds += 1),
        lockHealthy: () => true,
        stopped: () => false,
        stopWith: () => undefined,
        log: () => undefined,
      });
      pump.request();
      let later: Promise<void> = Promise.resolve();
      for (let i = 0; i < depth; i++) later = later.then(() => undefined);
      await later.then(() => pump.request());
      await new Promise((r) => setImmediate(r));
      await pump.settled();
      if (rounds !== 2) lostAt.push(depth);
    }
    expect(lostAt).toEqual([]);
  });
});
