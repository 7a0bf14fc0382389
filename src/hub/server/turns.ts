/**
 * Delivery bytes one turn may carry (or `--page-bytes`, when smaller). About one maximal-escape
 * entry (~390 KB on the wire) or a whole page of ordinary mail (100 entries of 1–2 KB): reading,
 * signing and writing that much is a few milliseconds of one core, well inside the 100 ms in which
 * another client must be answered, and no ordinary page is split across turns.
 */
export const TURN_BYTES = 256 * 1024;

/**
 * The Hub's bound on push work per turn of the event loop, in bytes of deliveries.
 *
 * A stream page is read, signed and written in one go: on SQLite the read itself runs on the
 * event loop, and signing a delivery parses and re-serialises its entry. Sixteen streams with a
 * backlog of maximal entries, woken in the same turn, did all their pages back to back before
 * the Hub could read anyone else's request. So a page asks here how many bytes it may read; it is
 * granted what is left of this turn's budget, or waits for the next turn when nothing is left.
 * However many streams are busy, one turn carries at most the budget plus one entry (a page
 * always holds one entry, whatever its size), and between turns the Hub answers everyone else.
 * Small pages give back what they did not use, so a fan-out of small mail shares one turn.
 *
 * A turn ends at the check phase (`setImmediate`), which comes after the poll for I/O.
 */
export class TurnBudget {
  private turn = 0;
  private spent = 0;
  private carried = 0;
  private endQueued = false;
  /** Pages waiting for room, in arrival order: `want` null takes what is left of a turn. */
  private readonly waiting: Array<{ want: number | null; admit: (g: Grant) => void }> = [];
  private readonly stats = { largest: 0, deferred: 0 };

  constructor(private readonly bytesPerTurn: number) {}

  /** Wait for room in a turn, then take what is left of it: the bytes the page may read. */
  grant(): Promise<Grant> {
    return this.enter(null);
  }

  /**
   * A bound for a page whose read answers in a later turn (a store a network round trip away):
   * the read holds no turn, so other pages may start theirs meanwhile; {@link settle} charges the
   * page to the turn its bytes are signed and written in, as for any page read across turns.
   */
  unheld(): Grant {
    return { turn: -1, bytes: this.bytesPerTurn };
  }

  /**
   * What the page holds, once read, before it is signed and written. In the turn it was granted
   * in, the unused part goes back to whoever waits; a page whose read finished in a later turn
   * (an asynchronous store) waits for room for its bytes in the turn it is serialised in.
   */
  async settle(g: Grant, bytes: number): Promise<void> {
    if (g.turn === this.turn) this.spend(bytes - g.bytes);
    // A page with nothing to send needs no room. It used to wait for a turn nothing was spent in
    // yet, and every page behind it with it: on PostgreSQL every page settles here, and at 10,000
    // streams most connects' first pages are empty, so a turn let in about one page with bytes
    // (docs/deploy.md, session 12).
    else if (bytes > 0) await this.enter(bytes);
    this.carried += bytes;
    this.stats.largest = Math.max(this.stats.largest, this.carried);
    this.admit();
  }

  /** The most delivery bytes one turn has carried since start, and how many pages waited for a later turn. */
  counts(): { largest: number; deferred: number } {
    return { ...this.stats };
  }

  private enter(want: number | null): Promise<Grant> {
    return new Promise<Grant>((admit) => {
      this.waiting.push({ want, admit });
      this.admit();
      if (this.waiting.length > 0) {
        this.stats.deferred += 1;
        this.endTurnSoon();
      }
    });
  }

  /** Let in, in order, every waiting page this turn has room for (a turn with nothing spent has room for any one). */
  private admit(): void {
    for (let next = this.waiting[0]; next !== undefined; next = this.waiting[0]) {
      const room = this.bytesPerTurn - this.spent;
      const bytes = next.want ?? room;
      if (this.spent > 0 && (bytes <= 0 || bytes > room)) return;
      this.waiting.shift();
      this.spend(bytes);
      next.admit({ turn: this.turn, bytes });
    }
  }

  private spend(bytes: number): void {
    this.spent += bytes;
    this.endTurnSoon();
  }

  private endTurnSoon(): void {
    if (this.endQueued) return;
    this.endQueued = true;
    setImmediate(() => {
      this.endQueued = false;
      this.turn += 1;
      this.spent = 0;
      this.carried = 0;
      this.admit();
    });
  }
}

/** A page's share of a turn: the turn it was granted in and the bytes it may read. */
export interface Grant {
  turn: number;
  bytes: number;
}
