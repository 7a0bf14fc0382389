import { deliveryWrapperBytes } from '../contract/index.js';
import { deliveryBytes, fitsPage, pendingArms, type EntryRow, type Mailbox, type PageBound, type PendingPage } from './entries.js';
import type { Sql } from './sql.js';

/** What each keyset arm reads of a candidate: its seq and its body's size, not the body. */
const SIZED = 'seq, OCTET_LENGTH(body) AS bytes';

/**
 * A stream's next page on SQLite, where a statement is a function call and not a round trip:
 * each keyset arm of the mailbox ({@link pendingArms}) as a statement of its own, merged here,
 * then the page's rows by seq in one statement. It is exactly the page {@link readPages} gives
 * (count and byte bounds, at least one entry, `more` when it stopped at a bound, principal mail
 * for every session that may claim it), and reads no more: each arm a range of one index (at most
 * `limit` entries), the size of each candidate from its record header (OCTET_LENGTH never loads a
 * body), and the bodies of the rows the page keeps. The one statement that merges it all
 * materialises two tables and sorts three times: ~190 K instructions for a one-entry page (under
 * callgrind, better-sqlite3), these four ~95 K.
 *
 * The statements see one state of the store: SQLite's reads outside a unit wait for a batch being
 * written, a batch starts only on a later turn of the event loop (group commit), and these follow
 * each other within one turn. On PostgreSQL each would be a round trip, and separate snapshots
 * there: it reads its pages with {@link readPages}.
 */
export async function readSqlitePage(q: Sql, box: Mailbox, afterSeq: number, bound: PageBound): Promise<PendingPage> {
  const recent = recents.get(q);
  const from = caughtUp.get(box);
  const remembered = recent !== undefined && from !== undefined && from.through === afterSeq ? recent.since(from.generation) : null;
  const page =
    remembered !== null
      ? await boundPage(
          remembered.filter((r) => r.seq > afterSeq && inMailbox(box, r)),
          bound,
          deliveryBytes,
          // Copies: a page's rows are the stream's (a claim marks its own).
          async (rows) => rows.map((r) => ({ ...r })),
        )
      : await durablePage(q, box, afterSeq, bound);
  // What this read saw, as of the batches committed by now: the next page of this mailbox after the
  // same seq, with nothing doubtful committed since, is the rows inserted meanwhile.
  if (recent !== undefined && !page.more && !recent.busy) {
    const last = page.rows[page.rows.length - 1];
    caughtUp.set(box, { through: Math.max(afterSeq, last?.seq ?? 0), generation: recent.generation });
  } else caughtUp.delete(box);
  return page;
}

async function durablePage(q: Sql, box: Mailbox, afterSeq: number, bound: PageBound): Promise<PendingPage> {
  const candidates: Array<{ seq: number; bytes: number }> = [];
  for (const arm of pendingArms(box, afterSeq, bound.limit, SIZED)) candidates.push(...(await q.all<{ seq: number; bytes: number }>(arm.sql, ...arm.params)));
  candidates.sort((x, y) => x.seq - y.seq);
  return boundPage(
    candidates,
    bound,
    (c) => c.bytes + deliveryWrapperBytes(),
    (wanted) =>
      rowsBySeq(
        q,
        wanted.map((c) => c.seq),
      ),
  );
}

/**
 * The page of `candidates` (a mailbox's pending entries after the cursor, by seq): at most
 * `bound.limit` of them and its bytes, `more` when it stopped at either bound.
 */
async function boundPage<C>(candidates: C[], bound: PageBound, bytesOf: (c: C) => number, rowsOf: (wanted: C[]) => Promise<EntryRow[]>): Promise<PendingPage> {
  const merged = Math.min(candidates.length, bound.limit);
  const wanted: C[] = [];
  let bytes = 0;
  for (const c of candidates.slice(0, merged)) {
    const b = bytesOf(c);
    if (!fitsPage(wanted.length, bytes, b, bound)) break;
    wanted.push(c);
    bytes += b;
  }
  return { rows: await rowsOf(wanted), more: wanted.length < merged || merged >= bound.limit, bytes };
}

/**
 * The rows of `seqs`, in seq order, in one statement. The list is padded (with its last seq) to a
 * power of two, so a page of any size runs one of eight statement texts, each prepared once.
 */
async function rowsBySeq(q: Sql, seqs: number[]): Promise<EntryRow[]> {
  if (seqs.length === 0) return [];
  let width = 1;
  while (width < seqs.length) width *= 2;
  const params = Array.from({ length: width }, (_, i) => seqs[Math.min(i, seqs.length - 1)]!);
  const rows = await q.all<EntryRow>(`SELECT * FROM entries WHERE seq IN (${params.map(() => '?').join(', ')})`, ...params);
  return rows.sort((x, y) => x.seq - y.seq);
}

/**
 * Whether a row as inserted (pending, claimed by nobody) is in `box`'s page: its session's own
 * mail or its agent's principal mail ({@link pendingArms}, whose third arm, mail this session
 * claimed, an insert never is).
 */
const inMailbox = (box: Mailbox, r: EntryRow): boolean =>
  r.to_session === null ? r.to_agent === box.agentId && r.claimed_session === null : r.to_session === box.sessionId;

/** Per stream (its Mailbox object): the seq its last page left it at, having seen everything pending then, and when. */
const caughtUp = new WeakMap<Mailbox, { through: number; generation: number }>();
/** The SQLite store's {@link RecentEntries}, by the store's `read` (what {@link readSqlitePage} is given). */
const recents = new WeakMap<Sql, RecentEntries>();

/** At most this many rows are remembered; a stream that fell further behind reads its page from the store. */
const REMEMBERED_ROWS = 1024;

/**
 * The entries the SQLite store inserted lately, by the batch (group commit) that committed them,
 * so a stream that had seen everything pending in its mailbox is handed the rows its wake-up
 * concerns without reading them back (the page read was about a fifth of a push's CPU). SQLite has
 * one writer and batches commit one after another, so a mailbox's pending entries after a stream's
 * cursor change only by what batches since did. A batch's entry inserts are known here with their
 * rows (the store's Tx.insertLocked); every other statement that may change `entries` drops what was
 * remembered until then ({@link RecentEntries.changed}), and a unit rolled back or a failed batch
 * counts as a change of any kind. A stream's page from memory is therefore the page
 * {@link durablePage} would read (seqs only grow: AUTOINCREMENT); whenever that is not certain, the
 * stream reads from the store. Rows are remembered only once their batch's COMMIT returned.
 */
export class RecentEntries {
  /** Batches ended so far (committed or not): a batch's rows are of the generation it ends with. */
  generation = 0;
  /** A batch's transaction is open. */
  busy = false;
  /** No row of a batch up to this one is known here: a stream that last read before it reads from the store. */
  private doubtfulThrough = 0;
  /** Rows of committed batches, oldest first, with their batch. */
  private rows: Array<{ generation: number; row: EntryRow }> = [];
  /** The open batch's inserted rows. */
  private open: EntryRow[] = [];

  /** Serve the pages {@link readSqlitePage} reads with `read`, the store's reads outside a unit. */
  serves(read: Sql): void {
    recents.set(read, this);
  }

  begun(): void {
    this.busy = true;
  }

  /** The open batch inserted `row` (its seq and every column as stored). */
  inserted(row: EntryRow): void {
    this.open.push(row);
  }

  /**
   * A statement other than an insert seen here changes `entries`. One that can only take rows out
   * of pending sets (`removesOnly`: an ack, an expiry, a claim) makes the rows remembered so far
   * doubtful: a stream that needs none of them still reads from memory (the rows after its cursor
   * were all inserted since it read, and are all remembered). Any other (a release, a move to the
   * principal mailbox, a bounce) may put rows in a pending set no insert put there: no stream that
   * read before this batch reads from memory.
   */
  changed(removesOnly: boolean): void {
    const batch = this.generation + 1;
    const newest = this.open.length > 0 ? batch : (this.rows[this.rows.length - 1]?.generation ?? 0);
    this.doubtfulThrough = Math.max(this.doubtfulThrough, removesOnly ? newest : batch);
    this.rows = [];
    this.open = [];
  }

  /** A unit's writes were rolled back: what it inserted or changed is undone, so nothing read before it is known here. */
  doubt(): void {
    this.changed(false);
  }

  /** The open batch ended: committed (its rows remembered) or rolled back (nothing of it is). */
  ended(committed: boolean): void {
    if (!committed) this.doubt();
    this.generation += 1;
    this.busy = false;
    for (const row of this.open) this.rows.push({ generation: this.generation, row });
    this.open = [];
    if (this.rows.length > REMEMBERED_ROWS) {
      const cut = this.rows.length - REMEMBERED_ROWS;
      this.doubtfulThrough = Math.max(this.doubtfulThrough, this.rows[cut - 1]!.generation);
      this.rows.splice(0, cut);
    }
  }

  /** The rows inserted by batches after `generation`, oldest first; null when they are not all known here (or a batch is open). */
  since(generation: number): EntryRow[] | null {
    if (this.busy || generation < this.doubtfulThrough) return null;
    const out: EntryRow[] = [];
    for (let i = this.rows.length - 1; i >= 0 && this.rows[i]!.generation > generation; i--) out.push(this.rows[i]!.row);
    return out.reverse();
  }
}
