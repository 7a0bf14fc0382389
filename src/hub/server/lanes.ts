/**
 * Which share of the database pool a piece of work draws from. `stream` is the work whose amount
 * the number of open streams multiplies, which one agent token can raise at will: stream pages and
 * stream connects. Everything else — every other API request, presence, the sweep — is `request`.
 */
export type Lane = 'request' | 'stream';

const LANES: readonly Lane[] = ['request', 'stream'];

/** One lane's counts since start (plain numbers: /metrics reads them at scrape). */
export interface LaneStats {
  /** Connections the lane holds now, and the most it held at once. */
  held: number;
  heldMax: number;
  /** Callers waiting for a connection now, the most at once, and how many ever had to wait. */
  waiting: number;
  waitingMax: number;
  waited: number;
}

interface LaneState extends LaneStats {
  cap: number;
  queue: Array<() => void>;
}

/**
 * Admission to a database pool of `max` connections, in two lanes.
 *
 * Sixteen streams that never read, connecting at once to one session, took every pooled
 * connection: each connect's unit waited for the session's row lock while holding its connection,
 * and the pages followed. Another client's `GET /v1/sessions/<id>` then queued behind them (up to
 * 176 ms in the pool's queue). So stream work holds at most `streamMax` connections, and a
 * connection that comes free goes to a waiting request first. Requests hold at most `max − 1`, so
 * one connection is always there for stream work and pushes never starve behind a flood of sends.
 * A request therefore waits only when requests alone fill `max − streamMax` connections, never
 * because of streams.
 *
 * Every connection of the pool is taken through here, so the pool's own queue stays empty.
 */
export class Lanes {
  private held = 0;
  private readonly lanes: Record<Lane, LaneState>;

  constructor(
    private readonly max: number,
    streamMax: number,
  ) {
    const state = (cap: number): LaneState => ({ cap: Math.max(1, cap), held: 0, heldMax: 0, waiting: 0, waitingMax: 0, waited: 0, queue: [] });
    this.lanes = { request: state(max - 1), stream: state(Math.min(streamMax, max)) };
  }

  /** Run `fn` holding one of the lane's connections; it waits its turn when the lane or the pool is full. */
  async run<T>(lane: Lane, fn: () => Promise<T>): Promise<T> {
    const l = this.lanes[lane];
    if (this.fits(l)) this.take(l);
    else {
      l.waited += 1;
      l.waiting += 1;
      l.waitingMax = Math.max(l.waitingMax, l.waiting);
      // The connection is handed over by `leave` (counted as taken there), never re-checked here.
      await new Promise<void>((resolve) => l.queue.push(resolve));
    }
    try {
      return await fn();
    } finally {
      l.held -= 1;
      this.held -= 1;
      this.next();
    }
  }

  stats(): Record<Lane, LaneStats> {
    const out = {} as Record<Lane, LaneStats>;
    for (const lane of LANES) {
      const { held, heldMax, waiting, waitingMax, waited } = this.lanes[lane];
      out[lane] = { held, heldMax, waiting, waitingMax, waited };
    }
    return out;
  }

  private fits(l: LaneState): boolean {
    return this.held < this.max && l.held < l.cap;
  }

  private take(l: LaneState): void {
    l.held += 1;
    l.heldMax = Math.max(l.heldMax, l.held);
    this.held += 1;
  }

  /** Requests first, each lane in arrival order. */
  private next(): void {
    for (const lane of LANES) {
      const l = this.lanes[lane];
      while (l.queue.length > 0 && this.fits(l)) {
        this.take(l);
        l.waiting -= 1;
        l.queue.shift()!();
      }
    }
  }
}
