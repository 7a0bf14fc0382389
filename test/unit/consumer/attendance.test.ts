import { describe, expect, it } from 'vitest';
import { readerAttendance, UnattendedClock, type AttendanceProbe } from '../../../src/consumer/attendance.js';
import type { Liveness, ProcessStamp, ReaderRecord, RecordRead } from '../../../src/spool/index.js';
import { readerRecord } from '../../helpers/records.js';

const T0 = 1_000_000;

const reader = (over: Partial<ReaderRecord> = {}): RecordRead<ReaderRecord> => ({
  state: 'ok',
  value: readerRecord({ host: 'h', started_at: T0, heartbeat_at: T0 + 4000, deadline_at: T0 + 570_000, ...over }),
});

const probe = (nowMs: number, dead: (s: ProcessStamp) => boolean = () => false): AttendanceProbe => ({
  nowMs,
  staleMs: 60_000,
  liveness: (s): Liveness => (dead(s) ? 'dead' : 'alive'),
});

describe('readerAttendance', () => {
  it('attends: record present, heartbeat fresh, inside its deadline, it and its starter alive', () => {
    expect(readerAttendance(reader(), probe(T0 + 5000))).toEqual({ attending: true });
  });

  it('does not attend without a record, or with one it cannot read', () => {
    expect(readerAttendance({ state: 'absent' }, probe(T0))).toMatchObject({ attending: false, lastAttendedAt: null });
    expect(readerAttendance({ state: 'unreadable', reason: 'garbage' }, probe(T0))).toMatchObject({ attending: false, why: /garbage/ });
  });

  it('a stale heartbeat is not attendance (a stopped or wedged reader)', () => {
    expect(readerAttendance(reader(), probe(T0 + 4000 + 60_001))).toMatchObject({ attending: false, why: /heartbeat/, lastAttendedAt: T0 + 4000 });
  });

  it('past its declared deadline the reader no longer attends, however fresh its heartbeat', () => {
    const r = reader({ heartbeat_at: T0 + 569_000 });
    expect(readerAttendance(r, probe(T0 + 570_000))).toMatchObject({ attending: false, why: /deadline/, lastAttendedAt: T0 + 569_000 });
  });

  it('a live pid is not enough: when the process that started the reader is gone, it does not attend', () => {
    const v = readerAttendance(
      reader(),
      probe(T0 + 5000, (s) => s.pid === 50),
    );
    // Its heartbeat says nothing about when attendance ended: a wedged reader keeps beating.
    expect(v).toMatchObject({ attending: false, why: /started the reader \(pid 50\)/, lastAttendedAt: null });
  });

  it('checks the starter by pid AND start time (a recycled pid is another process)', () => {
    const seen: ProcessStamp[] = [];
    readerAttendance(reader(), { ...probe(T0 + 5000), liveness: (s) => (seen.push(s), 'alive') });
    expect(seen).toContainEqual({ pid: 50, host: 'h', start_time: '5' });
  });

  it('a dead reader does not attend', () => {
    expect(
      readerAttendance(
        reader(),
        probe(T0 + 5000, (s) => s.pid === 100),
      ),
    ).toMatchObject({ attending: false, why: /reader pid 100/, lastAttendedAt: null });
  });
});

describe('UnattendedClock', () => {
  it('stops only after the whole bound with no attendance, measured from the consumer start', () => {
    const c = new UnattendedClock(T0, 900_000);
    const absent = { attending: false as const, why: 'no reader record', lastAttendedAt: null };
    expect(c.observe(absent, T0 + 899_999)).toEqual({ stop: false });
    expect(c.observe(absent, T0 + 900_000)).toEqual({ stop: true, idleMs: 900_000, why: 'no reader record' });
  });

  it('measures from the later of the last attendance and the start', () => {
    const c = new UnattendedClock(T0, 10_000);
    expect(c.observe({ attending: true }, T0 + 50_000)).toEqual({ stop: false });
    const gone = { attending: false as const, why: 'gone', lastAttendedAt: null };
    expect(c.observe(gone, T0 + 59_999)).toEqual({ stop: false });
    expect(c.observe(gone, T0 + 60_000)).toMatchObject({ stop: true, idleMs: 10_000 });
  });

  it("takes the reader's own last heartbeat into account when it is later than anything observed", () => {
    const c = new UnattendedClock(T0, 10_000);
    const stale = { attending: false as const, why: 'stale', lastAttendedAt: T0 + 30_000 };
    expect(c.observe(stale, T0 + 39_000)).toEqual({ stop: false });
    expect(c.observe(stale, T0 + 40_000)).toMatchObject({ stop: true });
  });

  it('never moves the start back for an old record (an adopted consumer gets no fresh bound from a long-gone reader, nor loses its own)', () => {
    const c = new UnattendedClock(T0, 10_000);
    const ancient = { attending: false as const, why: 'old', lastAttendedAt: T0 - 1_000_000 };
    expect(c.observe(ancient, T0 + 9_999)).toEqual({ stop: false });
  });
});
