/**
 * In-process wake-ups: new mail for an agent, a message whose state changed, a session
 * that ended. Emits are delivered on the next turn of the event loop (or right after a
 * group commit's COMMIT) and coalesced, so a listener never runs inside the writer's
 * transaction and a burst wakes it once.
 */
export type SessionEndReason = 'closed' | 'closed_by_operator' | 'lapsed';

type Listener = () => void;

/** When a key (or a family's head, or everything) was last emitted, and the time before that: a {@link Topic}'s emission counts. */
interface Emitted {
  last: number;
  /** 0: not emitted before `last` since this record was made. */
  prev: number;
}

/** Emissions remembered for hearing, at most: past it they are forgotten at once and every window open then answers yes (a wasted re-read, never a miss). */
const REMEMBERED = 65_536;

/**
 * What the topics emitted while someone was about to listen (see {@link Bus.hear}): the window of
 * the topic's emissions between `hear` and `stop`. The topic records each key's last two emissions
 * once, whoever hears; a window answers from those. (Each hearer used to collect every key emitted
 * while it heard: with stream connects queued for the pool, thousands hear at once, and every emit
 * cost that many set insertions — half a loaded Hub's samples.) An answer the records cannot give
 * exactly (forgotten, or emitted twice since the window closed) is yes: a re-check, never a miss.
 */
export class Heard {
  private stopped = Infinity;

  constructor(
    private readonly topic: Topic,
    private readonly start: number,
  ) {}

  stop(): void {
    if (this.stopped === Infinity) this.stopped = this.topic.count;
  }

  /** Whether `key` was woken while this was hearing (itself, its family, or everything). */
  has(key: string): boolean {
    const t = this.topic;
    if (this.within(t.everything) || this.within(t.keys.get(key))) return true;
    const cut = key.indexOf('#');
    return cut >= 0 && this.within(t.heads.get(key.slice(0, cut)));
  }

  private within(e: Emitted | undefined): boolean {
    const t = this.topic;
    if (e === undefined) return t.forgotten > this.start;
    if (e.last <= this.start) return false;
    if (e.last <= this.stopped) return true;
    // Emitted again after the window: did the one before fall inside it?
    if (e.prev === 0) return t.forgotten > this.start;
    if (e.prev <= this.start) return false;
    return true;
  }
}

/** Record an emission at `at` in `records` under `key`. */
function record(records: Map<string, Emitted>, key: string, at: number): void {
  const e = records.get(key);
  if (e === undefined) records.set(key, { last: at, prev: 0 });
  else {
    e.prev = e.last;
    e.last = at;
  }
}

class Topic {
  /**
   * Each key's listeners, in an array: most keys have one (a stream's own mailbox), and an array of
   * one is a third of a Set's bytes (57 against 153, Node 20); every held stream's live 30 s.
   */
  private readonly listeners = new Map<string, Listener[]>();
  /** Emissions so far: what a {@link Heard} window is measured in. */
  count = 0;
  /** Each key's last emissions, and each family head's ({@link Topic.emitFamily}), and {@link Topic.emitAll}'s. */
  readonly keys = new Map<string, Emitted>();
  readonly heads = new Map<string, Emitted>();
  everything: Emitted | undefined;
  /** Emissions up to this count may have been forgotten. */
  forgotten = 0;
  /** Recorded only once someone heard: `message` is never heard, and its keys are every message's id. */
  private recording = false;
  /** Keys of the form `<head>#<rest>` listened on, by head (see {@link Topic.emitFamily}). */
  private readonly families = new Map<string, Set<string>>();
  private readonly pending = new Set<string>();
  private scheduled = false;

  /** Listen on `key`; the returned function stops it. */
  on(key: string, fn: Listener): () => void {
    this.add(key, fn);
    return () => this.remove(key, fn);
  }

  /** Listen on `key` until {@link Topic.remove} (no closure made: a held stream stops its three itself). */
  add(key: string, fn: Listener): void {
    const fns = this.listeners.get(key);
    if (fns === undefined) {
      this.listeners.set(key, [fn]);
      this.family(key, true);
    } else if (!fns.includes(fn)) fns.push(fn);
  }

  remove(key: string, fn: Listener): void {
    const fns = this.listeners.get(key);
    const at = fns === undefined ? -1 : fns.indexOf(fn);
    if (at < 0) return;
    if (fns!.length > 1) {
      fns!.splice(at, 1);
      return;
    }
    this.listeners.delete(key);
    this.family(key, false);
  }

  /** Add `key` to its family's keys, or take it out. */
  private family(key: string, add: boolean): void {
    const cut = key.indexOf('#');
    if (cut < 0) return;
    const head = key.slice(0, cut);
    let keys = this.families.get(head);
    if (!keys) this.families.set(head, (keys = new Set()));
    if (add) keys.add(key);
    else keys.delete(key);
    if (keys.size === 0) this.families.delete(head);
  }

  /** Wake `head` and every `<head>#…` key someone listens on. */
  emitFamily(head: string): void {
    this.remember(this.heads, head);
    this.emit(head);
    for (const key of this.families.get(head) ?? []) this.emit(key);
  }

  /** Whether anyone listens on `key` now (every open stream listens on its agent's principal mailbox: messages.ts asks). */
  listening(key: string): boolean {
    return this.listeners.has(key);
  }

  /** A window of what is emitted from now on, until its stop. */
  hear(): Heard {
    this.recording = true;
    return new Heard(this, this.count);
  }

  private remember(records: Map<string, Emitted>, key: string): void {
    this.count += 1;
    if (!this.recording) return;
    if (this.keys.size + this.heads.size >= REMEMBERED) {
      this.keys.clear();
      this.heads.clear();
      this.forgotten = this.count - 1;
    }
    record(records, key, this.count);
  }

  emit(key: string): void {
    this.remember(this.keys, key);
    if (!this.listeners.has(key)) return;
    this.pending.add(key);
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => this.deliver());
  }

  /** Wake every key someone listens on (after missed wake-ups: each waiter re-checks once). */
  emitAll(): void {
    this.count += 1;
    this.everything = { last: this.count, prev: this.everything?.last ?? 0 };
    for (const key of this.listeners.keys()) this.emit(key);
  }

  /** Wake the listeners of every pending key now; call it only with the writes behind them committed. */
  deliver(): void {
    this.scheduled = false;
    const keys = [...this.pending];
    this.pending.clear();
    for (const k of keys) for (const fn of this.listeners.get(k)?.slice() ?? []) fn();
  }
}

export class Bus {
  /**
   * Keyed by agent id (drains wait there), and by mailbox, `<agent>#<session>` or `<agent>#`
   * (streams wait there): an entry for the agent was queued, woken on both keys.
   */
  readonly mail = new Topic();
  /**
   * Keyed by agent id: an entry older than a reader's keyset cursor became pending for it
   * again (claims released, a receipt moved to the principal mailbox). Streams read from the
   * start once more; `mail` alone would only wake them past their cursor.
   */
  readonly released = new Topic();
  /** Keyed by message id: its track or response changed. */
  readonly message = new Topic();
  /**
   * Keyed by session id: another instance ended the session or gave it another holder. The server
   * brings the streams registered here in line itself; a stream connect in flight hears it
   * ({@link Bus.hear}) and is brought in line once registered.
   */
  readonly session = new Topic();

  /**
   * Start hearing what `mail`, `released` and `session` emit, for a listener about to join: a stream connect
   * whose first page is read by its renewal statement, before the statement is sent. An entry
   * committed after the statement's snapshot wakes its mailbox only after that commit, so it is
   * either heard here or (once `stop` was called and the stream listens, in the same turn) heard by
   * the stream: it never falls between the page and the listening.
   */
  hear(): { mail: Heard; released: Heard; session: Heard; stop: () => void } {
    const [mail, released, session] = [this.mail.hear(), this.released.hear(), this.session.hear()];
    return {
      mail,
      released,
      session,
      stop: () => {
        mail.stop();
        released.stop();
        session.stop();
      },
    };
  }

  /**
   * Deliver what is pending on every topic now rather than on the next turn: a group
   * commit calls it right after its COMMIT, so a push goes out ahead of the batch's answers.
   */
  deliver(): void {
    this.mail.deliver();
    this.released.deliver();
    this.message.deliver();
  }
}
