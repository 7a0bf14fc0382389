import { deliveryWrapperBytes } from '../contract/index.js';
import { fitsPage, pendingArms, type EntryRow, type Mailbox, type PageBound, type PendingPage } from './entries.js';
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
  const candidates: Array<{ seq: number; bytes: number }> = [];
  for (const arm of pendingArms(box, afterSeq, bound.limit, SIZED)) candidates.push(...(await q.all<{ seq: number; bytes: number }>(arm.sql, ...arm.params)));
  candidates.sort((x, y) => x.seq - y.seq);
  const merged = Math.min(candidates.length, bound.limit);
  const wanted: number[] = [];
  let bytes = 0;
  for (const c of candidates.slice(0, merged)) {
    const b = c.bytes + deliveryWrapperBytes();
    if (!fitsPage(wanted.length, bytes, b, bound)) break;
    wanted.push(c.seq);
    bytes += b;
  }
  return { rows: await rowsBySeq(q, wanted), more: wanted.length < merged || merged >= bound.limit, bytes };
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
