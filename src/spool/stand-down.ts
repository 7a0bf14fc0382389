import { unlinkSync } from 'node:fs';
import { fsyncDir } from '../util/fs-durable.js';
import type { StateDir } from './state-dir.js';
import { spooledSession } from './succession.js';
import { STATE_FILES, type ProcessStamp, type StandDownRequest, type StoodDownSession } from './records.js';

/**
 * Standing a session down (`oh-hai session close`) across the two processes. The close asks
 * the running connection with a request file plus SIGTERM, so that the connection itself
 * closes the session once it has stopped draining and records the stand-down as its own
 * stop (15): a reader waiting on it then relays the stand-down, not a clean stop. Whoever
 * closes the session forgets its id here and keeps it in stood-down.json, so what arrived
 * under it is never replayed as fresh mail.
 */

const sameStamp = (a: ProcessStamp, b: ProcessStamp): boolean => a.pid === b.pid && a.host === b.host && a.start_time === b.start_time;

function remove(stateDir: StateDir, name: string): void {
  try {
    unlinkSync(stateDir.path(name));
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw e;
  }
  fsyncDir(stateDir.dir);
}

/** Ask the connection `target` to stand down when it is next signalled; written before the SIGTERM. */
export function requestStandDown(stateDir: StateDir, target: ProcessStamp, opts: { nowMs: number; budgetMs: number }): void {
  stateDir.write('standDownRequest', { pid: target.pid, host: target.host, start_time: target.start_time, requested_at: opts.nowMs, budget_ms: opts.budgetMs });
}

/** The request addressed to this very process (pid AND start time), or null: a request left for another process is not ours. */
export function standDownRequestFor(stateDir: StateDir, me: ProcessStamp): StandDownRequest | null {
  const read = stateDir.read('standDownRequest');
  return read.state === 'ok' && sameStamp(read.value, me) ? read.value : null;
}

/** Remove the request (answered, or its connection gone): a later plain SIGTERM must stay a clean stop. */
export function withdrawStandDown(stateDir: StateDir): void {
  remove(stateDir, STATE_FILES.standDownRequest);
}

/**
 * Forget a session closed at the Hub: it goes into stood-down.json first, then session.json
 * is removed (when it still names that session, or one the spool says it replaced: a
 * connection stopped before recording it), so no later command attaches or presents the id,
 * and the next reader and connection still learn that it was replaced.
 */
export function forgetSession(stateDir: StateDir, closed: StoodDownSession): void {
  const kept = stoodDownSessions(stateDir).filter((s) => s.id !== closed.id);
  stateDir.write('stoodDown', { sessions: [...kept, closed] });
  const current = stateDir.read('session');
  if (current.state !== 'ok' || current.value.id === closed.id || spooledSession(stateDir.dir, current.value.id)?.id === closed.id)
    remove(stateDir, STATE_FILES.session);
  stateDir.log(`stood down ${closed.id} (${closed.hub_state} at the Hub): forgot it here`);
}

/** Sessions stood down here that no new session has replaced yet; an unreadable record counts as none. */
export function stoodDownSessions(stateDir: StateDir): StoodDownSession[] {
  const read = stateDir.read('stoodDown');
  return read.state === 'ok' ? read.value.sessions : [];
}

/** A new session replaced the stood-down ones (they are in its history now). */
export function clearStoodDown(stateDir: StateDir): void {
  remove(stateDir, STATE_FILES.stoodDown);
}
