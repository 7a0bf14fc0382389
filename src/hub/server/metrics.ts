/**
 * What the Hub counts for /metrics. The Hub calls these on its paths; without
 * --admin-listen they cost nothing (prom-client is never loaded then).
 */
export interface HubMetrics {
  /** A request answered: the route's pattern (never its ids) and the status. */
  request(route: string, status: number): void;
  /** A message accepted (POST /v1/messages or a directive answered 202). */
  sent(): void;
  /** An entry went out on a stream for the first time, this long after it was queued (deployment clock). */
  pushed(latencyMs: number): void;
  /** One statement read the pages of this many streams (PostgreSQL's batched page read). */
  pagesRead(streams: number): void;
  /** Sessions whose lease ran out. */
  lapsed(n: number): void;
  /** An operator stop recorded (the kill-switch). */
  operatorStop(): void;
  /** A wake-up from another instance arrived, this long after it was sent. */
  notified(lagMs: number): void;
  /** A database unit ran again (deadlock, unique race). */
  retried(code: string): void;
  /** A timer-driven work failed (the sweep, the presence write, a listener's reconnect: failure-log.ts). */
  backgroundFailed(work: string): void;
}

export const NO_METRICS: HubMetrics = {
  request: () => undefined,
  sent: () => undefined,
  pushed: () => undefined,
  pagesRead: () => undefined,
  lapsed: () => undefined,
  operatorStop: () => undefined,
  notified: () => undefined,
  retried: () => undefined,
  backgroundFailed: () => undefined,
};

/** Metrics whose sink is set later (the admin listener starts after the store it reports on). */
export function metricsSlot(): HubMetrics & { target: HubMetrics } {
  const slot = {
    target: NO_METRICS,
    request: (route: string, status: number) => slot.target.request(route, status),
    sent: () => slot.target.sent(),
    pushed: (ms: number) => slot.target.pushed(ms),
    pagesRead: (n: number) => slot.target.pagesRead(n),
    lapsed: (n: number) => slot.target.lapsed(n),
    operatorStop: () => slot.target.operatorStop(),
    notified: (ms: number) => slot.target.notified(ms),
    retried: (code: string) => slot.target.retried(code),
    backgroundFailed: (work: string) => slot.target.backgroundFailed(work),
  };
  return slot;
}
