import type { Gate } from './coalesce.js';
import { readPages, type Mailbox, type PageBound, type PageRequest, type PendingPage } from './entries.js';
import type { Sql } from './sql.js';
import { runAs, type Work } from './work.js';

/** Streams' pages one statement reads at most. */
export const PAGES_PER_READ = 32;
/** Delivery bytes one statement reads at most, shared by its pages (each still carries one entry). */
export const READ_BYTES = 1024 * 1024;

/**
 * A mailbox no entry is in: reads are padded with it to a power of two, so at most seven statement
 * texts exist (PostgreSQL prepares and plans each text once per connection, and a text planned
 * only a few times never gets its generic plan).
 */
const NOBODY: PageRequest = { box: { agentId: '', sessionId: '' }, afterSeq: 0, bound: { limit: 1, maxBytes: 1 } };

interface Waiting extends PageRequest {
  settle: (page: PendingPage) => void;
  fail: (error: unknown) => void;
}

/**
 * Stream pages on a store where each statement is a round trip (PostgreSQL): every stream woken in
 * one turn of the event loop, or while the reads before it waited for the gate, is read by ONE
 * statement ({@link readPages}). A stream's page read alone was one pool acquisition per push, and
 * with at most half the pool reading pages while 50 senders queued for it (two acquisitions per
 * send), pushes fell behind sends and the lag grew for the whole run. Now a read waits for a gate
 * permit once and takes everything queued by the time it gets one, so the more streams wait, the
 * more each statement carries.
 */
export class PageReader {
  private queue: Waiting[] = [];
  /** A turn's end is queued to ask the gate. */
  private scheduled = false;
  /** A read has asked the gate and not been let in yet: what queues meanwhile goes with it. */
  private asking = false;

  constructor(
    private readonly read: Sql,
    private readonly gate: Gate,
    private readonly work: Work,
  ) {}

  /** The next page of `box` after `afterSeq`, read together with every other stream's page queued with it. */
  page(box: Mailbox, afterSeq: number, bound: PageBound): Promise<PendingPage> {
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
    void runAs(this.work, () =>
      this.gate.run(async () => {
        this.asking = false;
        const batch = this.queue.splice(0, PAGES_PER_READ);
        // More than one read's worth waits: the next asks for a permit of its own now.
        this.ask();
        if (batch.length === 0) return;
        const share = Math.floor(READ_BYTES / batch.length);
        try {
          const requests = batch.map((w) => ({
            box: w.box,
            afterSeq: w.afterSeq,
            bound: { limit: w.bound.limit, maxBytes: Math.min(w.bound.maxBytes, share) },
          }));
          while ((requests.length & (requests.length - 1)) !== 0) requests.push(NOBODY);
          const pages = await readPages(this.read, requests);
          for (const [i, w] of batch.entries()) w.settle(pages[i]!);
        } catch (e) {
          for (const w of batch) w.fail(e);
        }
      }),
    );
  }
}
