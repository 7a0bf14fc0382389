import type { ProcessStamp, ReaderRecord, RecordRead, Liveness } from '../spool/index.js';

export interface AttendanceProbe {
  nowMs: number;
  /** A heartbeat older than this is not attendance. */
  staleMs: number;
  liveness(stamp: ProcessStamp): Liveness;
}

export type Attendance =
  | { attending: true }
  | {
      attending: false;
      why: string;
      /** The last instant (our clock) the record shows the reader attending, when it says. */
      lastAttendedAt: number | null;
    };

export function readerAttendance(reader: RecordRead<ReaderRecord>, probe: AttendanceProbe): Attendance {
  if (reader.state === 'absent') return { attending: false, why: 'no reader record', lastAttendedAt: null };
  if (reader.state === 'unreadable') {
    return { attending: false, why: `the reader record could not be read (${reader.reason})`, lastAttendedAt: null };
  }
  const r = reader.value;
  // A stale heartbeat or a passed deadline dates the end of attendance; a dead reader or
  // starter does not (a wedged reader may keep beating after its starter is gone).
  const dated = (why: string): Attendance => ({ attending: false, why, lastAttendedAt: Math.min(r.heartbeat_at, r.deadline_at) });
  const undated = (why: string): Attendance => ({ attending: false, why, lastAttendedAt: null });
  const heartbeatAge = probe.nowMs - r.heartbeat_at;
  if (heartbeatAge > probe.staleMs) return dated(`the reader's heartbeat is ${Math.round(heartbeatAge / 1000)} s old`);
  if (probe.nowMs >= r.deadline_at) return dated('the reader is past the deadline it declared');
  // A reader on another host (unknown) is judged by its heartbeat alone: pids are host-local.
  if (probe.liveness(r) === 'dead') return undated(`reader pid ${r.pid} no longer exists`);
  const starter = { pid: r.starter_pid, host: r.host, start_time: r.starter_start_time };
  if (probe.liveness(starter) === 'dead') return undated(`the process that started the reader (pid ${r.starter_pid}) no longer exists`);
  return { attending: true };
}

export type UnattendedVerdict = { stop: false } | { stop: true; idleMs: number; why: string };

/**
 * Measures the unattended interval from the later of the reader's last attendance and the
 * consumer's own start, so a consumer started for a reader that then vanished still gets
 * the whole bound, and one adopted by a long-gone reader does not get a fresh one.
 */
export class UnattendedClock {
  private lastAttendedAt: number;

  constructor(
    startedAt: number,
    private readonly boundMs: number,
  ) {
    this.lastAttendedAt = startedAt;
  }

  observe(a: Attendance, nowMs: number): UnattendedVerdict {
    if (a.attending) {
      this.lastAttendedAt = Math.max(this.lastAttendedAt, nowMs);
      return { stop: false };
    }
    if (a.lastAttendedAt !== null) this.lastAttendedAt = Math.max(this.lastAttendedAt, a.lastAttendedAt);
    const idleMs = nowMs - this.lastAttendedAt;
    return idleMs >= this.boundMs ? { stop: true, idleMs, why: a.why } : { stop: false };
  }
}
