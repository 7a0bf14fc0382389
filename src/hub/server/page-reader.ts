import type { Gate } from './coalesce.js';
import { readSessionPages, type PageBound, type PendingPage, type SessionPageRequest } from './entries.js';
import type { Sql, Store } from './sql.js';
import { hop, TRACE } from '../../util/trace.js';

/** Streams' pages one statement reads at most. */
export const PAGES_PER_READ = 32;
/** Delivery bytes one statement reads at most, shared by its pages (each still carries one entry). */
export const READ_BYTES = 1024 * 1024;

interface Waiting extends SessionPageRequest {
  settle: (page: PendingPage) => void;
  fail: (error: unknown) => void;
}

/**
 * Stream pages on a store where each statement is a round trip (PostgreSQL): every stream woken in
 * one turn of the event loop, or while the read before it waited, is read by ONE statement
 * ({@link readSessionPages}). A stream's page read alone was one pool acquisition per push, and with at
 * most half the pool reading pages while 50 senders queued for it (two acquisitions per send),
 * pushes fell behind sends and the lag grew for the whole run. Now one read at a time waits — for
 * a gate permit, then for a pool connection (the pool's lanes: stream connects may hold the
 * rest) — and takes everything queued by the time it has the connection, so the more streams
 * wait, the more each statement carries. (Until session 8 it took them once it had the permit,
 * and then waited for the connection with that batch while the next gathered behind it.)
 */
export class PageReader {
  private queue: Waiting[] = [];
  /** A turn's end is queued to ask the gate. */
  private scheduled = false;
  /** A read has asked for a gate permit and a pool connection and not had both yet: what queues meanwhile goes with it. */
  private asking = false;

  constructor(
    /** The store as the work the pages are read for (`Store.as`: pushes draw from stream work's lane). */
    private readonly store: Pick<Store, 'reading'>,
    private readonly gate: Gate,
    /** Told how many streams' pages each statement read (/metrics). */
    private readonly batched: (streams: number) => void,
    /** The statement (a test on SQLite gives `readPages`, which reads the same pages). */
    private readonly readAll: (q: Sql, requests: readonly SessionPageRequest[]) => Promise<PendingPage[]> = readSessionPages,
  ) {}

  /** The next page of `box` after `afterSeq`, read together with every other stream's page queued with it. */
  page(box: SessionPageRequest['box'], afterSeq: number, bound: PageBound): Promise<PendingPage> {
    return new Promise<PendingPage>((settle, fail) => {
      this.queue.push({ box, afterSeq, bound, settle, fail });
      if (this.scheduled) return;
      this.scheduled = true;
      // At the end of this turn: every stream woken by the same commits joins.
      setImmediate(() => {
        this.scheduled = false;
        this.ask();
      });
    });
  }

  private ask(): void {
    if (this.asking || this.queue.length === 0) return;
    this.asking = true;
    void this.gate.run(() =>
      this.store.reading(async (read) => {
        this.asking = false;
        const batch = this.queue.splice(0, PAGES_PER_READ);
        // More than one read's worth waits: the next asks for its own permit and connection now.
        this.ask();
        if (batch.length === 0) return;
        this.batched(batch.length);
        const started = TRACE ? process.hrtime.bigint() : 0n;
        const share = Math.floor(READ_BYTES / batch.length);
        try {
          const requests = batch.map((w) => ({
            box: w.box,
            afterSeq: w.afterSeq,
            bound: { limit: w.bound.limit, maxBytes: Math.min(w.bound.maxBytes, share) },
          }));
          const pages = await this.readAll(read, requests);
          if (TRACE) tracePages(started, batch.length, pages);
          for (const [i, w] of batch.entries()) w.settle(pages[i]!);
        } catch (e) {
          for (const w of batch) w.fail(e);
        }
      }),
    );
  }
}

/** The push trace only: each row's read began (its connection in hand) at `started` and ended now, in a read of `streams` streams' pages. */
function tracePages(started: bigint, streams: number, pages: readonly PendingPage[]): void {
  const done = process.hrtime.bigint();
  for (const p of pages)
    for (const r of p.rows) {
      hop('hub.started', r.message_id, started);
      hop('hub.read', r.message_id, done);
      hop('ev.batch', `${r.message_id}:${streams}`, done);
    }
}
