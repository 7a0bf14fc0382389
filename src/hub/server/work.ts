import type { Lane } from './lanes.js';

/**
 * What the Hub is doing when it talks to its store: a request's route pattern (never its ids),
 * a stream's push, a sweep. The PostgreSQL store counts its round trips by it, so /metrics and
 * the statement-count tests can say what a send or a pushed page costs, apart from the
 * background work running at the same time.
 *
 * Passed, not found: whoever owns the work (the router for a request, the stream for its pushes,
 * the sweep, the presence write) takes its store calls through `Store.as(work)`. It was an
 * AsyncLocalStorage until session 16: on Node 20 one in use costs every promise of the process an
 * async hook (an init call and its properties on each promise, a before and an after call on each
 * reaction), and at 10,000 streams that was a share of the young generation's allocation.
 */
export interface Work {
  /** Named by the router once a request is matched (its pattern); `other` until then. */
  name: string;
  /** The share of the database pool it draws from (PostgreSQL); a request learns it once it is matched. */
  lane: Lane;
  /**
   * The push trace only (OH_HAI_TRACE, src/util/trace.ts): when the request arrived, when it last
   * got a pool connection and when its last statement answered, for the route to log by message id.
   */
  at?: { arrived?: bigint; laned?: bigint; done?: bigint };
}

/** The push trace only: note that `work` got a pool connection (`laned`) or its statement's answer (`done`) now. */
export function noteWork(work: Work, what: 'laned' | 'done'): void {
  if (work.at !== undefined) work.at[what] = process.hrtime.bigint();
}
