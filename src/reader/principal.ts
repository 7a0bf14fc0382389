import type { ConsumerSettings, DirectoryCacheKey, StateDir } from '../spool/index.js';
import { EXIT, type Outcome } from '../core/index.js';
import { Reader, type LegRun } from './reader.js';
import { NAME, noPolicyLine, stopLine, watchEpilogue, watcherRefusal } from './principal-words.js';
import type { NamedFlags } from './connection.js';

export interface WatchRun extends Omit<LegRun, 'leg'> {
  stateDir: StateDir;
  address: string;
  /** What the principal leg's connection must run with. */
  wanted: ConsumerSettings;
  waitMs: number;
  /** Whose directory cache names the senders in summary lines. */
  directory: DirectoryCacheKey;
  /** The flags the user named: each asserts what a running connection must use, as on the bridge. */
  named: NamedFlags;
}

/**
 * One run of `oh-hai inbox watch`: the bridge's reading loop on the principal leg, with the
 * principal rules — one watcher per identity per machine (a live one is never displaced:
 * there is no declared agent session to be the same agent re-running), a connection that
 * no session close stops (SIGTERM is its clean stop), and an epilogue without a lease.
 */
export function watchPrincipal(run: WatchRun): Promise<Outcome> {
  const { stateDir, address } = run;
  return new Reader({
    ...run,
    leg: {
      name: NAME,
      logName: 'inbox watch',
      stateDir,
      declared: false,
      waitMs: run.waitMs,
      wanted: run.wanted,
      directory: run.directory,
      named: run.named,
      stopRunning: stopLine,
      warnings: [],
      refusal: (facts) => ({ exit: EXIT.held, code: 'watcher_held', message: watcherRefusal(facts, address, stateDir.path('reader.json')) }),
      noPolicyLine: () => noPolicyLine(address),
      epilogue: (consumer, nowMs) => watchEpilogue(consumer, address, nowMs),
    },
  }).execute();
}
