import { describe, expect, it } from 'vitest';
import { STATE_FILES, ioCounts, resetIoCounts, writeCursor } from '../../../src/spool/index.js';
import { ackWorld } from './ack-world.js';

const http = (status: number, code: string) => ({ failure: { kind: 'http' as const, status, code, message: code, details: {}, retryAfterSeconds: null } });

describe('Acker', () => {
  it('with nothing in the ledger sends nothing', async () => {
    const w = ackWorld();
    expect(await w.acker.flush()).toEqual({ ok: true, delivered: 0, acknowledged: 0 });
    expect(w.acks).toEqual([]);
  });

  it('acks delivered what is spooled, acknowledged what the cursor passed — one ack each, naming the session', async () => {
    const w = ackWorld();
    const ends = w.spoolEntries(['e1', 'e2', 'e3']);
    writeCursor(w.dir, { seq: 2, offset: ends[1]! });
    expect(await w.acker.flush()).toEqual({ ok: true, delivered: 1, acknowledged: 2 });
    expect(w.acks).toEqual([
      { session: 'sess_a', delivered: ['e3'] },
      { session: 'sess_a', acknowledged: ['e1', 'e2'] },
    ]);
    expect(w.ledger.pending()).toEqual([{ id: 'e3', seq: 3, session: 'sess_a', state: 'delivered' }]);
    expect(w.logs).toEqual([]);
    // confirmed delivered: not sent again
    w.acks.length = 0;
    expect(await w.acker.flush()).toEqual({ ok: true, delivered: 0, acknowledged: 0 });
    expect(w.acks).toEqual([]);
  });

  // The ledger can hold entries the spool no longer has (a damaged tail cut at recovery after
  // they were ledgered): only a cursor checked against the spool says what the reader printed.
  describe('with a cursor that does not match the spool', () => {
    const mismatched = [
      ['on a record boundary with the wrong seq', (ends: number[]) => ({ seq: 5, offset: ends[2]! })],
      ['with a seq beyond the spool', () => ({ seq: 9, offset: 99_999 })],
    ] as const;
    for (const [what, cursor] of mismatched) {
      it(`${what}: acknowledges only up to the checked cursor and logs the rewind once`, async () => {
        const w = ackWorld();
        const ends = w.spoolEntries(['e1', 'e2', 'e3']);
        w.ledger.recordSpooled([
          { id: 'e4', seq: 4, session: 'sess_a' },
          { id: 'e5', seq: 5, session: 'sess_a' },
        ]);
        const raw = cursor(ends);
        writeCursor(w.dir, raw);
        expect(await w.acker.flush()).toEqual({ ok: true, delivered: 2, acknowledged: 3 });
        expect(w.acks).toEqual([
          { session: 'sess_a', delivered: ['e4', 'e5'] },
          { session: 'sess_a', acknowledged: ['e1', 'e2', 'e3'] },
        ]);
        expect(w.logs).toEqual([`cursor: no record ${raw.seq} ends at byte ${raw.offset} of ${w.stateDir.path(STATE_FILES.spool)}; rewound to seq 3`]);
        await w.acker.flush();
        expect(w.logs).toHaveLength(1);
        expect(w.ledger.pending().map((e) => [e.id, e.state])).toEqual([
          ['e4', 'delivered'],
          ['e5', 'delivered'],
        ]);
      });
    }

    it('a cursor that matches again after a rewind is not logged, and a new mismatch is', async () => {
      const w = ackWorld();
      const ends = w.spoolEntries(['e1', 'e2', 'e3']);
      writeCursor(w.dir, { seq: 3, offset: ends[1]! });
      expect(w.acker.cursorSeq()).toBe(3);
      writeCursor(w.dir, { seq: 1, offset: ends[0]! });
      expect(w.acker.cursorSeq()).toBe(1);
      writeCursor(w.dir, { seq: 3, offset: ends[1]! });
      expect(w.acker.cursorSeq()).toBe(3);
      expect(w.logs).toHaveLength(2);
    });
  });

  it('acks entries that arrived under a replaced session without naming a session', async () => {
    const w = ackWorld({ session: 'sess_b' });
    w.spoolEntries(['old'], 'sess_a');
    const ends = w.spoolEntries(['new'], 'sess_b');
    writeCursor(w.dir, { seq: 2, offset: ends[1]! });
    await w.acker.flush();
    expect(w.acks).toEqual([{ session: 'sess_b', acknowledged: ['new'] }, { acknowledged: ['old'] }]);
  });

  it('on the principal leg names no session at all', async () => {
    const w = ackWorld({ session: null });
    w.spoolEntries(['e1']);
    await w.acker.flush();
    expect(w.acks).toEqual([{ delivered: ['e1'] }]);
  });

  it('records the lease an ack renewed', async () => {
    const w = ackWorld();
    w.spoolEntries(['e1']);
    const lease = { id: 'sess_a', expires_at: '2026-09-18T15:00:00.000Z', lease_seconds: 3600 };
    w.answers.push({ unknown: [], session: lease });
    await w.acker.flush();
    expect(w.renewals).toEqual([lease]);
  });

  it('drops ids the Hub does not know from the ledger (they would be acked forever), and says so', async () => {
    const w = ackWorld();
    w.spoolEntries(['e1', 'e2']);
    w.answers.push({ unknown: ['e2'] });
    expect(await w.acker.flush()).toEqual({ ok: true, delivered: 2, acknowledged: 0 });
    expect(w.ledger.pending().map((e) => [e.id, e.state])).toEqual([['e1', 'delivered']]);
    expect(w.logs).toEqual(['ack delivered: the Hub does not know e2 (already resolved there); dropping them from the ledger']);
  });

  it('an unknown id in an acknowledged ack is logged and leaves the ledger like the rest', async () => {
    const w = ackWorld();
    const ends = w.spoolEntries(['e1', 'e2']);
    writeCursor(w.dir, { seq: 2, offset: ends[1]! });
    w.answers.push({ unknown: ['e1'] });
    await w.acker.flush();
    expect(w.ledger.pending()).toEqual([]);
    expect(w.logs).toEqual(['ack acknowledged: the Hub does not know e1 (already resolved there); dropping them from the ledger']);
  });

  it('a failed ack changes nothing in the ledger and stops the flush there; a fault is retried, a decision stops', async () => {
    const w = ackWorld();
    const ends = w.spoolEntries(['e1', 'e2']);
    writeCursor(w.dir, { seq: 1, offset: ends[0]! });
    w.answers.push(http(503, 'unavailable'));
    const r = await w.acker.flush();
    expect(r).toMatchObject({ ok: false, disposition: { kind: 'fault', message: 'ack delivered on sess_a: HTTP 503 unavailable: unavailable' } });
    expect(w.acks).toHaveLength(1);
    expect(w.ledger.pending().map((e) => e.state)).toEqual(['spooled', 'spooled']);
    w.answers.push({ unknown: [] }, http(401, 'unauthorized'));
    expect(await w.acker.flush()).toMatchObject({
      ok: false,
      disposition: { kind: 'stop', stop: { exit: 3, reason: 'unauthorized', message: /^ack acknowledged on sess_a: HTTP 401/ } },
    });
    expect(w.ledger.pending().map((e) => [e.id, e.state])).toEqual([
      ['e1', 'spooled'],
      ['e2', 'delivered'],
    ]);
  });

  it('a pinned session that lapsed is a stop naming the pin', async () => {
    const w = ackWorld({ session: 'sess_p', pinned: 'sess_p' });
    w.spoolEntries(['e1'], 'sess_p');
    w.answers.push(http(410, 'session_lapsed'));
    expect(await w.acker.flush()).toMatchObject({ ok: false, disposition: { kind: 'stop', stop: { exit: 11, message: /pinned session sess_p/ } } });
  });

  // The delivery's ack round runs beside the waiting reader's wake: re-validating a cursor that
  // has not moved since the last round was a segment listing and two reads of the spool in it.
  describe('validating the cursor', () => {
    const flushCounted = async (w: ReturnType<typeof ackWorld>) => {
      resetIoCounts();
      await w.acker.flush();
      return ioCounts();
    };

    it('a cursor found valid is not validated again while it stands: one read of cursor.json, nothing of the spool', async () => {
      const w = ackWorld();
      let ends = w.spoolEntries(['e1', 'e2']);
      writeCursor(w.dir, { seq: 1, offset: ends[0]! });
      expect((await flushCounted(w)).listings).toBeGreaterThan(0);
      // a delivery: spooled and ledgered, the reader not there yet
      ends = w.spoolEntries(['e3']);
      expect(await flushCounted(w)).toEqual({ opens: { [STATE_FILES.cursor]: 1 }, listings: 0, versionChecks: 0, heldReads: 0 });
      expect(w.acks.at(-1)).toEqual({ session: 'sess_a', delivered: ['e3'] });
      // the reader printed on: the moved cursor is validated
      writeCursor(w.dir, { seq: 2, offset: ends[1]! });
      expect((await flushCounted(w)).listings).toBeGreaterThan(0);
      expect(w.acks.at(-1)).toEqual({ session: 'sess_a', acknowledged: ['e2'] });
    });

    it('a cursor just past the last record spooled (a reader that caught up) needs nothing of the spool', async () => {
      const w = ackWorld();
      const ends = w.spoolEntries(['e1', 'e2']);
      writeCursor(w.dir, { seq: 2, offset: ends[1]! });
      expect(await flushCounted(w)).toEqual({ opens: { [STATE_FILES.cursor]: 1 }, listings: 0, versionChecks: 0, heldReads: 0 });
      expect(w.acks).toEqual([{ session: 'sess_a', acknowledged: ['e1', 'e2'] }]);
      // one byte short of the last record's end is not its end: validated, and rewound
      const end = w.spoolEntries(['e3'])[2]!;
      writeCursor(w.dir, { seq: 3, offset: end - 1 });
      expect((await flushCounted(w)).listings).toBeGreaterThan(0);
      expect(w.logs).toEqual([`cursor: no record 3 ends at byte ${end - 1} of ${w.stateDir.path(STATE_FILES.spool)}; rewound to seq 3`]);
    });

    it('a cursor that was rewound is validated again on every round (only a valid one is remembered)', async () => {
      const w = ackWorld();
      const ends = w.spoolEntries(['e1', 'e2']);
      writeCursor(w.dir, { seq: 2, offset: ends[0]! });
      expect((await flushCounted(w)).listings).toBeGreaterThan(0);
      w.spoolEntries(['e3']);
      expect((await flushCounted(w)).listings).toBeGreaterThan(0);
      expect(w.logs).toHaveLength(1);
    });
  });
});
