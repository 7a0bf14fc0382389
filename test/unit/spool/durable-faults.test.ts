import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { STATE_FILES, Ledger, SeenJti, Spool, type NewSpoolRecord, type SpoolEntry } from '../../../src/spool/index.js';
import { fakeClock } from '../../../src/util/clock.js';
import { io } from '../../helpers/fs-faults.js';
import { tempDir } from './tmp.js';

// A failing write or fsync is a fault no real process gives on demand: node:fs is wrapped
// (test/helpers/fs-faults.ts) so one can be injected into exactly one file's descriptor.
vi.mock('node:fs', async (actual) => (await import('../../helpers/fs-faults.js')).faultyFs(await actual()));

afterEach(() => io.reset());

const clock = fakeClock(Date.parse('2026-09-18T14:00:00.000Z'));
const isSpool = (f: string) => f === STATE_FILES.spool;
const isLedger = (f: string) => f === STATE_FILES.ledger;
const isSeen = (f: string) => f === STATE_FILES.seenJti;

const entry = (id: string): NewSpoolRecord<SpoolEntry> => ({
  type: 'entry',
  session: 'sess_a',
  entry: { id, kind: 'directive', from: 'human:h1', to: 'agent:agt_1#sess_a', created_at: '2026-09-18T13:59:59.000Z', text: `text of ${id}` },
  signature: 'sig',
});

function openSpool(dir: string): Spool {
  const r = Spool.open(dir, { clock });
  if (!r.ok) throw new Error(r.reason);
  return r.value;
}

function openLedger(dir: string): Ledger {
  const r = Ledger.open(dir);
  if (!r.ok) throw new Error(r.reason);
  return r.value;
}

const lines = (file: string): string[] =>
  readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l !== '');

/** The writes and fsyncs `act` made, on every file. */
function during(act: () => void): { op: string; file: string; fd: number }[] {
  const from = io.events.length;
  act();
  return io.since(from);
}

/** What `act` threw (it must throw), and the writes and fsyncs it made meanwhile. */
function failing(act: () => void): { thrown: Error; ops: { op: string; file: string; fd: number }[] } {
  let thrown: unknown = null;
  const ops = during(() => {
    try {
      act();
    } catch (e) {
      thrown = e;
    }
  });
  if (!(thrown instanceof Error)) throw new Error('expected the call to throw');
  return { thrown, ops };
}

describe('the spool under write and fsync faults', () => {
  it('fsyncs the spool file exactly once per append, after its write and before append returns', () => {
    const s = openSpool(tempDir());
    const ops = during(() => s.append([entry('e1'), entry('e2')]));
    const onSpool = ops.filter((e) => isSpool(e.file));
    expect(onSpool.map((e) => e.op)).toEqual(['write', 'fsync']);
    // the same descriptor: an fsync of another file (the directory) would not make these bytes durable
    expect(new Set(onSpool.map((e) => e.fd)).size).toBe(1);
    expect(ops.filter((e) => e.op === 'fsync')).toHaveLength(1);
    s.close();
  });

  it('loops over short writes: every record lands whole', () => {
    const dir = tempDir();
    const s = openSpool(dir);
    io.capWrites(isSpool, 7);
    s.append([entry('e1'), entry('e2')]);
    s.close();
    io.reset();
    const again = openSpool(dir);
    expect(again.recovery).toBeNull();
    expect(again.readAfter(0).map((i) => i.record.seq)).toEqual([1, 2]);
    again.close();
  });

  it('a failed fsync is never retried: the error names the file and the fsync, and later appends refuse as broken', () => {
    const dir = tempDir();
    const s = openSpool(dir);
    s.append([entry('e1')]);
    io.failNext('fsync', isSpool);
    const { thrown, ops } = failing(() => s.append([entry('e2')]));
    expect(thrown).toMatchObject({ name: 'SpoolWriteError', code: 'spool_fsync_failed' });
    const message = thrown.message;
    expect(message).toContain(path.join(dir, STATE_FILES.spool));
    expect(message).toMatch(/fsync.*EIO: i\/o error, fsync.*not retried/);
    // exactly one fsync: a second one could "succeed" on pages the kernel already dropped
    expect(ops.filter((e) => e.op === 'fsync')).toHaveLength(1);
    expect(s.lastSeq()).toBe(1);
    expect(s.hasEntry('e2')).toBe(false);
    const later = during(() =>
      expect(() => s.append([entry('e3')])).toThrow(
        expect.objectContaining({ code: 'spool_broken', message: expect.stringMatching(/broken|failed earlier/) }) as Error,
      ),
    );
    expect(later).toEqual([]);
    expect(() => s.append([])).toThrow(/failed earlier \(fsync: EIO/);
    s.close();
  });

  it('a failed write is not retried either, and the torn record it left is cut at the next open', () => {
    const dir = tempDir();
    const s = openSpool(dir);
    s.append([entry('e1')]);
    io.failNext('write', isSpool, { code: 'ENOSPC', writeFirst: 20 });
    const { thrown, ops } = failing(() => s.append([entry('e2')]));
    expect(thrown).toMatchObject({ name: 'SpoolWriteError', code: 'spool_write_failed' });
    expect(thrown.message).toContain(`writing to the spool ${path.join(dir, STATE_FILES.spool)} failed: ENOSPC: no space left on device, write`);
    expect(ops.filter((e) => e.op === 'fsync')).toEqual([]);
    expect(() => s.append([entry('e3')])).toThrow(expect.objectContaining({ code: 'spool_broken' }) as Error);
    expect(s.end()).toBe(Buffer.byteLength(lines(path.join(dir, STATE_FILES.spool))[0]! + '\n'));
    s.close();
    const again = openSpool(dir);
    expect(again.recovery).toMatchObject({ cutBytes: 20 });
    expect(again.lastSeq()).toBe(1);
    expect(again.hasEntry('e2')).toBe(false);
    again.close();
  });
});

describe('the ledger under write and fsync faults', () => {
  const item = (id: string, seq: number) => ({ id, seq, session: 'sess_a' });

  it('fsyncs the ledger file once per `delivered` and `acknowledged` call, after its write; `entry` lines are written unsynced', () => {
    const l = openLedger(tempDir());
    // What recordSpooled says is the spool record's, fsynced before it; the open rebuilds a lost `entry` line from it.
    expect(during(() => l.recordSpooled([item('e1', 1), item('e2', 2)])).map((e) => [e.op, isLedger(e.file)])).toEqual([['write', true]]);
    for (const act of [() => l.markDelivered(['e1']), () => l.acknowledge(['e1'])]) {
      const ops = during(act);
      expect(ops.map((e) => [e.op, isLedger(e.file)])).toEqual([
        ['write', true],
        ['fsync', true],
      ]);
      expect(ops[0]!.fd).toBe(ops[1]!.fd);
    }
    l.close();
  });

  it('writes nothing when nothing changes', () => {
    const l = openLedger(tempDir());
    l.recordSpooled([item('e1', 1)]);
    expect(during(() => l.recordSpooled([item('e1', 1)]))).toEqual([]);
    expect(during(() => l.markDelivered(['nope']))).toEqual([]);
    expect(during(() => l.acknowledge(['nope']))).toEqual([]);
    l.close();
  });

  for (const op of ['write', 'fsync'] as const) {
    it(`a failed ${op} names the ledger and the ${op}, changes nothing in memory, and every later call refuses as broken`, () => {
      const dir = tempDir();
      const l = openLedger(dir);
      l.recordSpooled([item('e1', 1)]);
      io.failNext(op, isLedger);
      // An `entry` line has no fsync of its own: its write fails here, a `delivered` line's fsync.
      const { thrown, ops } = failing(op === 'write' ? () => l.recordSpooled([item('e2', 2)]) : () => l.markDelivered(['e1']));
      expect(thrown).toMatchObject({ name: 'LedgerWriteError', code: `ledger_${op}_failed` });
      const message = thrown.message;
      expect(message).toContain(path.join(dir, STATE_FILES.ledger));
      expect(message).toContain(`EIO: i/o error, ${op}`);
      expect(ops.filter((e) => e.op === 'fsync')).toHaveLength(op === 'fsync' ? 1 : 0);
      // not in memory either: nothing the disk may not hold can be acked
      expect(l.has('e2')).toBe(false);
      expect(l.pending().map((e) => [e.id, e.state])).toEqual([['e1', 'spooled']]);
      for (const later of [() => l.recordSpooled([item('e3', 3)]), () => l.markDelivered(['e1']), () => l.acknowledge(['e1']), () => l.compact()]) {
        expect(
          during(() =>
            expect(later).toThrow(
              expect.objectContaining({ code: 'ledger_broken', message: expect.stringContaining(path.join(dir, STATE_FILES.ledger)) }) as Error,
            ),
          ),
        ).toEqual([]);
      }
      expect(l.pending().map((e) => e.id)).toEqual(['e1']);
      l.close();
    });
  }

  it('a failed compaction leaves the ledger broken and the file as it was', () => {
    const dir = tempDir();
    const l = openLedger(dir);
    l.recordSpooled([item('e1', 1), item('e2', 2)]);
    l.acknowledge(['e1']);
    const before = readFileSync(path.join(dir, STATE_FILES.ledger), 'utf8');
    // compaction replaces the file atomically: the failing fsync is its temp file's
    io.failNext('fsync', (f) => f.includes(STATE_FILES.ledger));
    expect(() => l.compact()).toThrow(
      expect.objectContaining({ code: 'ledger_write_failed', message: expect.stringMatching(/compacting the ledger .*ledger\.ndjson failed: EIO/) }) as Error,
    );
    expect(readFileSync(path.join(dir, STATE_FILES.ledger), 'utf8')).toBe(before);
    expect(() => l.markDelivered(['e2'])).toThrow(
      expect.objectContaining({ code: 'ledger_broken', message: expect.stringContaining('compact: EIO') }) as Error,
    );
    l.close();
  });
});

describe('the seen-jti set under write and fsync faults', () => {
  function load(dir: string): SeenJti {
    const r = SeenJti.load(dir);
    if (!r.ok) throw new Error(r.reason);
    return r.value;
  }

  it('persists with one write and one fsync of seen-jti.ndjson: no temp file, no rename, no directory fsync', () => {
    const s = load(tempDir());
    s.add('jti_aaaaaaaaaaaaaaaa', 1000);
    const ops = during(() => s.persist());
    expect(ops.map((e) => [e.op, e.file])).toEqual([
      ['write', STATE_FILES.seenJti],
      ['fsync', STATE_FILES.seenJti],
    ]);
    expect(during(() => s.persist())).toEqual([]);
  });

  for (const op of ['write', 'fsync'] as const) {
    it(`a failed ${op} names seen-jti.ndjson and the ${op}, keeps what earlier persists wrote, and a later persist refuses as broken`, () => {
      const dir = tempDir();
      const s = load(dir);
      s.add('jti_aaaaaaaaaaaaaaaa', 1000);
      s.persist();
      s.add('jti_bbbbbbbbbbbbbbbb', 1001);
      io.failNext(op, isSeen);
      const { thrown, ops } = failing(() => s.persist());
      const message = thrown.message;
      expect(message).toContain(path.join(dir, STATE_FILES.seenJti));
      expect(message).toContain(`EIO: i/o error, ${op}`);
      expect(ops.filter((e) => e.op === 'fsync')).toHaveLength(op === 'fsync' ? 1 : 0);
      s.add('jti_cccccccccccccccc', 1002);
      expect(during(() => expect(() => s.persist()).toThrow(/broken/))).toEqual([]);
      s.close();
      // A failed write left nothing of its line; a failed fsync's line may stand (it was never acked on).
      const again = load(dir);
      expect(again.has('jti_aaaaaaaaaaaaaaaa')).toBe(true);
      expect(again.has('jti_cccccccccccccccc')).toBe(false);
      again.close();
    });
  }
});
