import { isSameProcessAlive, sameProcess, type ConsumerRecord, type ProcessStamp, type StateDir } from '../spool/index.js';

export type ConsumerEnd = { kind: 'stopped'; record: ConsumerRecord } | { kind: 'died'; pid: number };

/**
 * Whether the background connection this run relies on has ended. A record present when
 * this run started a new connection (`baseline`: a stopped or dead predecessor) is not
 * news; the connection this run spawned may not have written its record yet.
 */
export class ConsumerWatch {
  constructor(
    private readonly stateDir: StateDir,
    private readonly baseline: ConsumerRecord | null,
    private readonly spawned: ProcessStamp | null,
  ) {}

  private current(): ConsumerRecord | null {
    const rec = this.stateDir.read('consumer');
    if (rec.state !== 'ok') return null;
    return this.baseline && sameProcess(rec.value, this.baseline) ? null : rec.value;
  }

  ended(): ConsumerEnd | null {
    const rec = this.current();
    if (rec) {
      if (rec.state === 'stopped') return { kind: 'stopped', record: rec };
      return isSameProcessAlive(rec) === 'dead' ? { kind: 'died', pid: rec.pid } : null;
    }
    if (this.spawned === null || isSameProcessAlive(this.spawned) !== 'dead') return null;
    // It may have recorded its stop just before it exited: read once more now that it is gone.
    const last = this.current();
    if (last?.state === 'stopped') return { kind: 'stopped', record: last };
    if (last && isSameProcessAlive(last) !== 'dead') return null;
    return { kind: 'died', pid: this.spawned.pid };
  }
}
