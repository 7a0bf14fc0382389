import { deliveryBytes, mailboxKey, type EntryRow, type EntryTarget, type Mailbox, type PageBound, type PendingPage } from '../entries.js';
import { boundPageOf, inMailbox } from '../sqlite-pages.js';
import type { Store, WakeTopic } from '../sql.js';

/** At most this many echoed rows are remembered; a stream that fell further behind reads its page from the store. */
const REMEMBERED_ROWS = 1024;
/** Keys whose last unknown wake-up is remembered, at most; past it every stream reads once from the store. */
const REMEMBERED_KEYS = 65_536;
/** Sends in flight or answered and not yet echoed, at most (a statement that never answers leaves its record). */
const REMEMBERED_SENDS = 4096;

/** A send this instance made, from its statement to its NOTIFY's echo. */
interface Sent {
  to: EntryTarget;
  /** The entry as stored, once the statement answered; null before. */
  row: EntryRow | null;
  /** A stream found it answered but not echoed, and waits for the echo's wake-up. */
  awaited: boolean;
  /** The echo's position, when it came before the answer (both are sent at the COMMIT). */
  echoedAt: number | null;
}

/** What a stream's last page left it at: past `through`, everything pending as of `at` (a {@link NotifiedEntries.position}). */
interface CaughtUp {
  through: number;
  at: number;
}

/** A wake-up of a payload: its topic, key, and (a `mail` agent key of an earlier build) every mailbox of the agent. */
export interface PayloadWake {
  topic: WakeTopic;
  key: string;
  family: boolean;
}

/** Whether an entry sent to `to` may be in `box`'s pages. */
const reaches = (to: EntryTarget, box: Mailbox): boolean => to.agentId === box.agentId && (to.sessionId === null || to.sessionId === box.sessionId);

const memories = new WeakMap<Store['reading'], NotifiedEntries>();

/** The page memory of the PostgreSQL store whose `reading` this is; undefined on any other store. */
export const memoryOf = (store: Pick<Store, 'reading'>): NotifiedEntries | undefined => memories.get(store.reading);

/**
 * The PostgreSQL push from memory (issue 14, session 11): a caught-up stream is handed an entry this
 * instance inserted without reading it back (one round trip, and its socket and parse work, per push).
 *
 * Why it is exact. An agent's entries commit in seq order: every insert takes the agent's
 * transaction lock before its seq is drawn (Tx.insertLocked, messages.ts insertInOne) and holds it
 * to COMMIT. Every insert commits with a NOTIFY of its mailbox's keys, and PostgreSQL queues the
 * notifications of committing transactions in commit order (async.c PreCommit_Notify holds a
 * database-wide lock from queueing until after the commit), which is the order every listener,
 * this instance's own included, hands them on. So when this instance's listener hands on the echo
 * of its own send S, every entry of S's agent committed before S, here or elsewhere, was handed on
 * before it, and is known here: its row (a send of this instance, remembered) or that its mailbox
 * may hold something unknown (its keys' {@link position}). A stream whose last page saw everything
 * pending as of position P (a read sent then, or a page from memory) and whose mailbox had no
 * unknown wake-up since P is handed the remembered rows echoed since P, and only those; when any
 * of that is not certain it reads from the store. Releases and moves to the principal mailbox
 * (`released`, rows back into a pending set) and state changes of a remembered row's message
 * (`message`: an ack, a bounce, an expiry) are unknown wake-ups of the agent, whether this
 * instance's (marked at its COMMIT, and again at its echo) or another's; a listener that dropped
 * forgets everything.
 */
export class NotifiedEntries {
  /** Events counted so far: payloads the listener handed on, this instance's own wake-ups, resyncs. */
  position = 0;
  /** No stream whose last page is from before this reads from memory. */
  private doubtfulThrough = 0;
  /** Per mailbox key, and per agent (every mailbox of it), the position of its last unknown wake-up. */
  private unknown = new Map<string, number>();
  private sent = new Map<string, Sent>();
  /** Rows of this instance's sends, in the order of their echoes, with the echo's position. */
  private rows: Array<{ at: number; row: EntryRow }> = [];
  /** The agent of each remembered row's message. */
  private messages = new Map<string, string>();
  private readonly caught = new WeakMap<Mailbox, CaughtUp>();

  /** `wake` wakes a mailbox key of this instance (`mail`). */
  constructor(private readonly wake: (key: string) => void) {}

  /** Serve the pages of the store whose `reading` this is. */
  serves(store: Pick<Store, 'reading'>): void {
    memories.set(store.reading, this);
  }

  /** A send of the entry `entryId` to `to` is about to run; its NOTIFY names the entry. */
  sending(entryId: string, to: EntryTarget): void {
    if (this.sent.size >= REMEMBERED_SENDS) this.forget();
    this.sent.set(entryId, { to, row: null, awaited: false, echoedAt: null });
  }

  /** The send committed with `row` (null: it did not, or its answer is lost). */
  answered(entryId: string, row: EntryRow | null): void {
    const s = this.sent.get(entryId);
    if (s === undefined) return;
    if (s.echoedAt === null) {
      if (row === null) this.sent.delete(entryId);
      else s.row = row;
      return;
    }
    this.sent.delete(entryId);
    if (row !== null) return this.remember(row, s.echoedAt);
    // Committed (it echoed) and its row is not known here: its mailbox has something unknown.
    this.position += 1;
    const key = mailboxKey(s.to.agentId, s.to.sessionId);
    this.unknownAt(key, this.position);
    this.wake(key);
  }

  /**
   * This instance's wake-ups of a unit or statement that committed, at its COMMIT (before the listener
   * echoes them): unknown wake-ups, but the mailbox keys of the send of `entry` remembered here.
   */
  local(wakes: ReadonlyArray<readonly [WakeTopic, string]>, entry?: string): void {
    this.position += 1;
    const covered = entry === undefined ? null : (this.sent.get(entry)?.to ?? null);
    for (const [topic, key] of wakes) this.note({ topic, key, family: false }, covered);
  }

  /**
   * A payload the listener hands on (`own`: this instance's echo), with the entries it names. Answers
   * the mailbox keys of echoed sends a stream waits for (their wake-ups are this instance's, and
   * were woken at their COMMIT already).
   */
  heard(wakes: readonly PayloadWake[], entries: readonly string[], own: boolean): void {
    this.position += 1;
    let covered: EntryTarget | null = null;
    for (const id of own ? entries : []) {
      const s = this.sent.get(id);
      if (s === undefined) continue;
      covered = s.to;
      // Echoed before its statement answered: it takes this place once its row is known.
      if (s.row === null) {
        s.echoedAt = this.position;
        continue;
      }
      this.sent.delete(id);
      this.remember(s.row, this.position);
      if (s.awaited) this.wake(mailboxKey(s.to.agentId, s.to.sessionId));
    }
    // An own payload names one send at most (Store.once): its mailbox keys are that send's.
    for (const w of wakes) this.note(w, covered);
  }

  /** `row`, echoed at `at`, in echo order. */
  private remember(row: EntryRow, at: number): void {
    let i = this.rows.length;
    while (i > 0 && this.rows[i - 1]!.at > at) i--;
    this.rows.splice(i, 0, { at, row });
    if (row.message_id !== null) this.messages.set(row.message_id, row.to_agent);
    if (this.rows.length <= REMEMBERED_ROWS) return;
    // A row forgotten is unknown to its mailbox's streams that had not seen it (and to no other).
    for (const { at: was, row: r } of this.rows.splice(0, this.rows.length - REMEMBERED_ROWS)) {
      if (r.message_id !== null) this.messages.delete(r.message_id);
      this.unknownAt(mailboxKey(r.to_agent, r.to_session), was);
    }
  }

  /** The listener was re-opened: what was notified meanwhile is lost, so nothing from before is known. */
  resync(): void {
    this.forget();
  }

  /** The position a read sent now reads as of (everything committed before it is in the read). */
  mark(): number {
    return this.position;
  }

  /** A page of `box` after `afterSeq`, read as of `at` ({@link mark}, taken before its statement was sent): what it saw. */
  read(box: Mailbox, afterSeq: number, page: PendingPage, at: number): PendingPage {
    if (page.more) this.caught.delete(box);
    else this.caught.set(box, { through: Math.max(afterSeq, page.rows[page.rows.length - 1]?.seq ?? 0), at });
    return page;
  }

  /**
   * The page of `box` after `afterSeq` from memory: null when it must be read from the store. An
   * empty page when the only rows it would take are sends answered and not yet echoed (the echo
   * wakes the mailbox again).
   */
  page(box: Mailbox, afterSeq: number, bound: PageBound): PendingPage | null {
    const from = this.caught.get(box);
    if (from === undefined || from.through !== afterSeq || from.at < this.doubtfulThrough) return this.miss(box);
    if (this.since(mailboxKey(box.agentId, box.sessionId)) > from.at || this.since(box.agentId) > from.at) return this.miss(box);
    if (box.sessionId !== null && this.since(mailboxKey(box.agentId, null)) > from.at) return this.miss(box);
    const rows: EntryRow[] = [];
    for (let i = this.rows.length - 1; i >= 0 && this.rows[i]!.at > from.at; i--) {
      const r = this.rows[i]!.row;
      if (r.seq > afterSeq && inMailbox(box, r)) rows.push(r);
    }
    let awaited = false;
    for (const s of this.sent.values()) {
      // Echoed, its row not known yet: nothing past it is certain; its answer wakes the mailbox (Store.once).
      if (s.row === null && s.echoedAt !== null && s.echoedAt > from.at && reaches(s.to, box)) return { rows: [], more: false, bytes: 0 };
      if (s.row !== null && s.row.seq > afterSeq && inMailbox(box, s.row)) awaited = s.awaited = true;
    }
    if (rows.length === 0 && !awaited) return this.miss(box);
    // Copies: a page's rows are the stream's (a claim marks its own).
    const page = boundPageOf(
      rows.reverse().map((r) => ({ ...r })),
      bound,
      deliveryBytes,
    );
    return this.read(box, afterSeq, page, this.position);
  }

  private miss(box: Mailbox): null {
    this.caught.delete(box);
    return null;
  }

  private since(key: string): number {
    return this.unknown.get(key) ?? 0;
  }

  /** An unknown wake-up at the current position, unless it is a mailbox key of `covered` (a remembered send's). */
  private note(w: PayloadWake, covered: EntryTarget | null): void {
    let key: string | undefined;
    if (w.topic === 'mail') {
      const own = covered !== null && (w.key === covered.agentId || w.key === mailboxKey(covered.agentId, covered.sessionId));
      // An agent's own key (drains wait there) says nothing of its mailboxes but from an earlier build.
      if (!own && (w.family || w.key.includes('#'))) key = w.key;
    } else if (w.topic === 'released') key = w.key;
    else if (w.topic === 'message') key = this.messages.get(w.key);
    if (key !== undefined) this.unknownAt(key, this.position);
  }

  /** `key`'s mailbox had something not known here at `at`. */
  private unknownAt(key: string, at: number): void {
    if (!this.unknown.has(key) && this.unknown.size >= REMEMBERED_KEYS) this.forget();
    this.unknown.set(key, Math.max(this.since(key), at));
  }

  private forget(): void {
    this.position += 1;
    this.doubtfulThrough = this.position;
    this.unknown.clear();
    this.sent.clear();
    this.rows = [];
    this.messages.clear();
  }
}
