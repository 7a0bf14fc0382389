/**
 * What a piece of database work draws from the pool as. `page` and `connect` are stream work, the
 * work whose amount the number of open streams multiplies and which one agent token can raise at
 * will: a page read (or claim) pushing to open streams, and a stream's connect (its credential and
 * its lease renewal). Everything else — every other API request, presence, the sweep — is `request`.
 */
export type Lane = 'request' | 'page' | 'connect';

/** The pool's two shares: requests, and stream work (pages and connects together). */
export type Share = 'request' | 'stream';

/** One lane's or share's counts since start (plain numbers: /metrics reads them at scrape). */
export interface LaneStats {
  /** Connections held now, and the most held at once. */
  held: number;
  heldMax: number;
  /** Callers waiting for a connection now, the most at once, and how many ever had to wait. */
  waiting: number;
  waitingMax: number;
  waited: number;
}

export interface LanesStats extends Record<Share | Lane, LaneStats> {
  /** Connections handed to a waiting page while a connect waited too (each within {@link PAGES_PER_CONNECT}). */
  pagesBeforeConnects: number;
  /** Connections handed to waiting stream work, below its share, while requests (at their own share or more) waited too. */
  streamBeforeRequests: number;
}

/**
 * While connects wait, at most this many waiting pages are handed a connection in a row before the
 * oldest connect is: a stream between connections waits for its push too, so connects keep at
 * least a fifth of stream work's connections however many pages queue. (Pages themselves queue at
 * most the page gate's permits deep, src/hub/server/stream.ts, and each carries every stream woken
 * meanwhile, up to 32: a page's connection serves more pushes than a connect's.)
 */
export const PAGES_PER_CONNECT = 4;

const SHARE_OF: Record<Lane, Share> = { request: 'request', page: 'stream', connect: 'stream' };

const counts = (): LaneStats => ({ held: 0, heldMax: 0, waiting: 0, waitingMax: 0, waited: 0 });

/**
 * Admission to a database pool of `max` connections: two shares, and within stream work's share,
 * pushes on open streams ahead of connects.
 *
 * Sixteen streams that never read, connecting at once to one session, took every pooled
 * connection: each connect's unit waited for the session's row lock while holding its connection,
 * and the pages followed. Another client's `GET /v1/sessions/<id>` then queued behind them (up to
 * 176 ms in the pool's queue). So stream work holds at most `streamMax` connections, and requests
 * at most `max − 1`, so one connection is always there for stream work.
 *
 * A connection that comes free goes, among those waiting:
 * 1. to a request while requests hold fewer than `max − streamMax` (at least one): a request
 *    therefore waits only when requests alone fill that many, never because of streams;
 * 2. then to stream work while it holds fewer than its share. Until session 8 every waiting
 *    request went first: with 50 sends in flight on a pool of 20 requests always waited, so each
 *    connection stream work let go went to a send, and pages and connects were left sharing
 *    about one connection (issue 14's 10,000-stream bench: push p99 4.9 s at 648 sends/s). Stream
 *    work now keeps its share; requests still borrow whatever of it stream work leaves idle;
 * 3. then to requests up to `max − 1`.
 * Within stream work a waiting page goes before a waiting connect, at most
 * {@link PAGES_PER_CONNECT} in a row: at deploy/'s 30 s hold 10,000 streams make ~333 connects a
 * second, and a page pushing to open streams queued behind them (docs/deploy.md "Pushes ahead of
 * reconnects in the pool": of 3,000 pushes per run, 228–655 came on a later connection although
 * the one open at the send lived on > 1 s after its 202 before, 0–31 after).
 * Each lane is served in arrival order.
 *
 * Every connection of the pool is taken through here, so the pool's own queue stays empty.
 */
export class Lanes {
  private held = 0;
  private readonly caps: Record<Share, number>;
  /** Requests hold this many before waiting stream work goes first. */
  private readonly requestReserve: number;
  private readonly count: Record<Share | Lane, LaneStats> = { request: counts(), stream: counts(), page: counts(), connect: counts() };
  private readonly queues: Record<Lane, Array<() => void>> = { request: [], page: [], connect: [] };
  /** Pages handed a connection in a row while a connect waited. */
  private pagesInRow = 0;
  private pagesBeforeConnects = 0;
  private streamBeforeRequests = 0;

  constructor(
    private readonly max: number,
    streamMax: number,
  ) {
    const stream = Math.max(1, Math.min(streamMax, max));
    this.caps = { request: Math.max(1, max - 1), stream };
    this.requestReserve = Math.max(1, max - stream);
  }

  /** Run `fn` holding one connection for `lane`; it waits its turn when its share or the pool is full. */
  async run<T>(lane: Lane, fn: () => Promise<T>): Promise<T> {
    // A waiter that fits is handed its connection at once (next), so one that fits now jumps no queue.
    if (this.fits(lane)) this.take(lane);
    else {
      for (const s of this.counted(lane)) {
        s.waited += 1;
        s.waiting += 1;
        s.waitingMax = Math.max(s.waitingMax, s.waiting);
      }
      // The connection is handed over by `next` (counted as taken there), never re-checked here.
      await new Promise<void>((resolve) => this.queues[lane].push(resolve));
    }
    try {
      return await fn();
    } finally {
      for (const s of this.counted(lane)) s.held -= 1;
      this.held -= 1;
      this.next();
    }
  }

  stats(): LanesStats {
    const out = { pagesBeforeConnects: this.pagesBeforeConnects, streamBeforeRequests: this.streamBeforeRequests } as LanesStats;
    for (const [k, s] of Object.entries(this.count) as Array<[Share | Lane, LaneStats]>) out[k] = { ...s };
    return out;
  }

  /** The counts `lane` moves: its own, and stream work's share for a page or a connect. */
  private counted(lane: Lane): LaneStats[] {
    return lane === 'request' ? [this.count.request] : [this.count[lane], this.count.stream];
  }

  private fits(lane: Lane): boolean {
    const share = SHARE_OF[lane];
    return this.held < this.max && this.count[share].held < this.caps[share];
  }

  private take(lane: Lane): void {
    for (const s of this.counted(lane)) {
      s.held += 1;
      s.heldMax = Math.max(s.heldMax, s.held);
    }
    this.held += 1;
  }

  /** Hand connections that came free to waiters, in the order the class comment gives. */
  private next(): void {
    for (let lane = this.choose(); lane !== null; lane = this.choose()) {
      if (lane === 'page' && this.queues.connect.length > 0) {
        this.pagesInRow += 1;
        this.pagesBeforeConnects += 1;
      } else if (lane === 'connect') this.pagesInRow = 0;
      this.take(lane);
      for (const s of this.counted(lane)) s.waiting -= 1;
      this.queues[lane].shift()!();
    }
  }

  private choose(): Lane | null {
    const request = this.queues.request.length > 0 && this.fits('request');
    const stream = this.streamNext();
    if (!request) return stream;
    if (stream === null || this.count.request.held < this.requestReserve) return 'request';
    this.streamBeforeRequests += 1;
    return stream;
  }

  /** Stream work's next waiter, if its share has room: a page, unless {@link PAGES_PER_CONNECT} went while a connect waited. */
  private streamNext(): Lane | null {
    if (!this.fits('page')) return null;
    const page = this.queues.page.length > 0;
    const connect = this.queues.connect.length > 0;
    if (page && (!connect || this.pagesInRow < PAGES_PER_CONNECT)) return 'page';
    return connect ? 'connect' : null;
  }
}
