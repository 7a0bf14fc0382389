import { AsyncLocalStorage } from 'node:async_hooks';
import type { Lane } from './lanes.js';

/**
 * What the Hub is doing when it talks to its store: a request's route pattern (never its ids),
 * a stream's push, a sweep. The PostgreSQL store counts its round trips by it, so /metrics and
 * the statement-count tests can say what a send or a pushed page costs, apart from the
 * background work running at the same time.
 */
export interface Work {
  name: string;
  /** The share of the database pool it draws from (PostgreSQL); `request` when unset. */
  lane?: Lane;
  /**
   * The push trace only (OH_HAI_TRACE, src/util/trace.ts): when the request arrived, when it last
   * got a pool connection and when its last statement answered, for the route to log by message id.
   */
  at?: { arrived?: bigint; laned?: bigint; done?: bigint };
}

const current = new AsyncLocalStorage<Work>();
// Off unless a store counts by work (PostgreSQL): on Node 20 an AsyncLocalStorage in use costs
// every promise of the process a hook, which the SQLite Hub's send path does not pay.
let tracking = false;

/** Count by work from now on (the PostgreSQL store, whose round trips are worth it). */
export function trackWork(): void {
  tracking = true;
}

/** Run `fn` (and everything it starts) as `work`, when work is tracked. */
export const runAs = <T>(work: Work, fn: () => T): T => (tracking ? current.run(work, fn) : fn());

/** The work this code runs for; `other` outside any. */
export const workName = (): string => current.getStore()?.name ?? 'other';

/** The pool's lane this code draws from; `request` outside any work. */
export const workLane = (): Lane => current.getStore()?.lane ?? 'request';

/** The push trace only: note that the work under way got a pool connection (`laned`) or its statement's answer (`done`) now. */
export function noteWork(what: 'laned' | 'done'): void {
  const at = current.getStore()?.at;
  if (at !== undefined) at[what] = process.hrtime.bigint();
}

/** The push trace's instants of the work under way (see {@link Work.at}). */
export const workAt = (): Work['at'] => current.getStore()?.at;

/** Name the work under way (a request learns its route pattern, and so its lane, only once it is matched). */
export function nameWork(name: string, lane: Lane): void {
  const w = current.getStore();
  if (w !== undefined) {
    w.name = name;
    w.lane = lane;
  }
}
