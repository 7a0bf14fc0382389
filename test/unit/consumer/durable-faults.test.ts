import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { AckPump } from '../../../src/consumer/ack-pump.js';
import { Ingest } from '../../../src/consumer/ingest.js';
import type { Stop } from '../../../src/consumer/stops.js';
import { STATE_FILES, SeenJti } from '../../../src/spool/index.js';
import { io } from '../../helpers/fs-faults.js';
import { ackWorld } from './ack-world.js';
import { arrived, delivery, sessionContext } from './deliveries.js';

// The safety property under a failing disk: verify → dedup → append + fsync → ledger →
// ack. A write or fsync that fails anywhere on that path stops the consumer with 1 and
// nothing more is acked — the Hub keeps what was not acknowledged and redelivers it.
vi.mock('node:fs', async (actual) => (await import('../../helpers/fs-faults.js')).faultyFs(await actual()));

afterEach(() => io.reset());

function consumer() {
  const w = ackWorld();
  const seen = SeenJti.load(w.dir);
  if (!seen.ok) throw new Error(seen.reason);
  const logs: string[] = [];
  const ingest = new Ingest({ spool: w.spool, ledger: w.ledger, seen: seen.value, log: (t) => logs.push(t), lockHealthy: () => true });
  const stops: Stop[] = [];
  const pump = new AckPump({
    acker: w.acker,
    commit: () => ingest.commit(),
    lockHealthy: () => true,
    stopped: () => stops.length > 0,
    stopWith: (s) => stops.push(s),
    log: (t) => logs.push(t),
  });
  const ctx = sessionContext(seen.value);
  const round = async () => {
    pump.request();
    await pump.settled();
  };
  return { w, ingest, ctx, stops, logs, round, file: (name: string) => path.join(w.dir, name) };
}

describe('a failing disk on the durable path acks nothing', () => {
  it('the spool: the batch stops with 1 naming the spool and the fsync; nothing is ledgered or acked; a redelivery finds it broken', async () => {
    const c = consumer();
    io.failNext('fsync', (f) => f === STATE_FILES.spool);
    const r = c.ingest.run([delivery('ent_1')], arrived, c.ctx);
    expect(r).toMatchObject({ ok: false, stop: { exit: 1, reason: 'spool_write_failed' } });
    if (r.ok) return;
    expect(r.stop.message).toContain(`fsync of the spool ${c.file(STATE_FILES.spool)} failed: EIO: i/o error, fsync`);
    expect(r.stop.message).toContain('Not retried: nothing more is acked');
    expect(c.logs).toEqual([r.stop.message]);
    await c.round();
    expect(c.w.acks).toEqual([]);
    expect(c.w.ledger.pending()).toEqual([]);
    expect(c.ingest.run([delivery('ent_1')], arrived, c.ctx)).toMatchObject({ ok: false, stop: { reason: 'spool_write_failed', message: /failed earlier/ } });
    expect(c.w.spool.lastSeq()).toBe(0);
  });

  // The round's ledger line is written without an fsync (the spool holds it durably): its write is what can fail there.
  const later = [
    [
      'the ledger',
      STATE_FILES.ledger,
      'write',
      (f: string) => f === STATE_FILES.ledger,
      /writing to the ledger .*ledger\.ndjson failed: EIO: i\/o error, write/,
    ],
    [
      'the seen-jti set',
      STATE_FILES.seenJti,
      'fsync',
      (f: string) => f.includes(STATE_FILES.seenJti),
      /seen-jti set .*seen-jti\.json failed: EIO: i\/o error, fsync/,
    ],
  ] as const;
  for (const [what, name, op, match, said] of later) {
    it(`${what}: the ack round stops with 1 naming ${name} and the ${op}, before any ack, and runs no more rounds`, async () => {
      const c = consumer();
      expect(c.ingest.run([delivery('ent_1')], arrived, c.ctx)).toMatchObject({ ok: true, spooled: 1 });
      io.failNext(op, match);
      const from = io.events.length;
      await c.round();
      expect(c.stops).toHaveLength(1);
      expect(c.stops[0]).toMatchObject({ exit: 1, reason: 'spool_write_failed', message: said });
      expect(c.stops[0]!.message).toContain(c.file(name));
      expect(c.w.acks).toEqual([]);
      const tried = io.since(from, match).filter((e) => e.op === op).length;
      expect(tried).toBe(1);
      await c.round();
      expect(c.w.acks).toEqual([]);
      expect(io.since(from, match).filter((e) => e.op === op)).toHaveLength(tried);
    });
  }

  it('a round with something to commit fsyncs seen-jti once and writes the ledger unsynced, before the ack', async () => {
    const c = consumer();
    c.ingest.run([delivery('ent_1')], arrived, c.ctx);
    const from = io.events.length;
    await c.round();
    expect(io.since(from).map((e) => [e.op, path.basename(e.file)])).toEqual([
      ['write', STATE_FILES.ledger],
      ['write', STATE_FILES.seenJti],
      ['fsync', STATE_FILES.seenJti],
      // after the Hub's answer to `ack delivered`
      ['write', STATE_FILES.ledger],
      ['fsync', STATE_FILES.ledger],
    ]);
    expect(c.w.acks).toEqual([{ session: 'sess_a', delivered: ['ent_1'] }]);
  });

  it('with a healthy disk the same path acks (the faults above are what stops it)', async () => {
    const c = consumer();
    c.ingest.run([delivery('ent_1')], arrived, c.ctx);
    await c.round();
    expect(c.stops).toEqual([]);
    expect(c.w.acks).toEqual([{ session: 'sess_a', delivered: ['ent_1'] }]);
  });
});
