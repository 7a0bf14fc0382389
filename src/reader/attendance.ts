import { statSync } from 'node:fs';
import { isSameProcessAlive, parentPid, processStartTime, sameProcess, type ProcessStamp, type ReaderRecord, type StateDir } from '../spool/index.js';
import type { Clock, Timers } from '../util/clock.js';
import { decideHolder, type HolderDecision, type HolderFacts } from './holder.js';

/**
 * The reader's record (reader.json) and its heartbeat. Attendance is a heartbeat, not a
 * pid: the consumer reads this record to decide whether anyone is reading its spool.
 */

export interface ReaderTiming {
  heartbeatMs: number;
  staleMs: number;
  /** wait bound + grace: the reader attends only inside this deadline. */
  deadlineMs: number;
}

export interface Me {
  pid: number;
  host: string;
  declared: boolean;
}

/** Tell the live reader about to be signalled that its SIGTERM is a displacement (see ReaderDisplaced). */
export function noteDisplaced(stateDir: StateDir, holder: ProcessStamp, by: ProcessStamp): void {
  stateDir.write('readerDisplaced', { displaced: { pid: holder.pid, host: holder.host, start_time: holder.start_time }, by: { pid: by.pid, host: by.host } });
}

/** The newer reader, when its notice names this process as the one it displaced. */
export function displacedBy(stateDir: StateDir, me: ProcessStamp): { pid: number; host: string } | null {
  const r = stateDir.read('readerDisplaced');
  return r.state === 'ok' && sameProcess(r.value.displaced, me) ? r.value.by : null;
}

function writtenAt(stateDir: StateDir): number | null {
  try {
    return statSync(stateDir.path('reader.json')).mtimeMs;
  } catch {
    return null;
  }
}

/** Gather the facts about whoever holds reader.json now, and decide. */
export function judgeHolder(stateDir: StateDir, me: Me, clock: Clock, staleMs: number): { facts: HolderFacts; decision: HolderDecision } {
  const record = stateDir.read('reader');
  const facts: HolderFacts = { record, writtenAt: writtenAt(stateDir), alive: 'unknown', starterAlive: 'unknown', nowMs: clock.now(), staleMs };
  if (record.state === 'ok') {
    const h = record.value;
    facts.alive = isSameProcessAlive(h);
    facts.starterAlive = isSameProcessAlive({ pid: h.starter_pid, host: h.host, start_time: h.starter_start_time });
  }
  return { facts, decision: decideHolder(facts, me.declared) };
}

export function myRecord(me: Me, clock: Clock, timing: ReaderTiming): ReaderRecord {
  const now = clock.now();
  const starter = parentPid(me.pid) ?? 1;
  return {
    pid: me.pid,
    host: me.host,
    start_time: processStartTime(me.pid),
    starter_pid: starter,
    starter_start_time: processStartTime(starter),
    started_at: now,
    heartbeat_at: now,
    deadline_at: now + timing.deadlineMs,
    declared_identity: me.declared,
  };
}

export type AttendanceEnd = { kind: 'displaced'; by: ReaderRecord } | { kind: 'orphaned'; starterPid: number };

/**
 * Beats every heartbeatMs: first checks that the record is still ours (a newer reader of
 * this agent session displaces us by overwriting it) and that the process that started us
 * still exists (`nohup oh-hai bridge &` must stop when its shell exits), then writes.
 */
export class Heartbeat {
  private cancel: (() => void) | null = null;
  private stopped = false;

  constructor(
    private readonly stateDir: StateDir,
    private readonly record: ReaderRecord,
    private readonly clock: Timers,
  ) {}

  /** `onTick` runs after every beat: the reader's slow re-check of what fs.watch may have missed. */
  start(heartbeatMs: number, onEnd: (end: AttendanceEnd) => void, onTick: () => void): void {
    if (this.stopped) return;
    this.cancel = this.clock.setTimer(heartbeatMs, () => {
      const end = this.check();
      if (end) {
        this.stop();
        onEnd(end);
        return;
      }
      this.beat();
      onTick();
      this.start(heartbeatMs, onEnd, onTick);
    });
  }

  /** Why this reader no longer attends, or null while it does. */
  check(): AttendanceEnd | null {
    const now = this.stateDir.read('reader');
    // Absent or unreadable is not another reader's claim: the next beat rewrites ours.
    if (now.state === 'ok' && !sameProcess(now.value, this.record)) return { kind: 'displaced', by: now.value };
    const r = this.record;
    if (isSameProcessAlive({ pid: r.starter_pid, host: r.host, start_time: r.starter_start_time }) === 'dead') {
      return { kind: 'orphaned', starterPid: r.starter_pid };
    }
    return null;
  }

  private beat(): void {
    this.record.heartbeat_at = this.clock.now();
    try {
      this.stateDir.write('reader', this.record);
    } catch {
      // A missed beat ages the record; the next one retries. The consumer judges staleness.
    }
  }

  stop(): void {
    this.stopped = true;
    this.cancel?.();
    this.cancel = null;
  }
}
