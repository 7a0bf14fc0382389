/**
 * In-process wake-ups: new mail for an agent, a message whose state changed, a session
 * that ended. Emits are delivered on the next turn of the event loop (or right after a
 * group commit's COMMIT) and coalesced, so a listener never runs inside the writer's
 * transaction and a burst wakes it once.
 */
export type SessionEndReason = 'closed' | 'closed_by_operator' | 'lapsed';

type Listener = () => void;

/**
 * What the topics emitted while someone was about to listen (see {@link Bus.hear}): the keys, or
 * everything (a re-check of every waiter after missed wake-ups).
 */
export class Heard {
  // Made on the first key: a connect's statement is mostly in flight while nothing is emitted.
  private keys: Set<string> | null = null;
  /** Heads woken with their whole family ({@link Topic.emitFamily}). */
  private families: Set<string> | null = null;
  everything = false;

  key(key: string): void {
    (this.keys ??= new Set()).add(key);
  }

  family(head: string): void {
    (this.families ??= new Set()).add(head);
  }

  /** Whether `key` was woken while this was hearing (itself, its family, or everything). */
  has(key: string): boolean {
    if (this.everything || this.keys?.has(key)) return true;
    const cut = key.indexOf('#');
    return cut >= 0 && this.families !== null && this.families.has(key.slice(0, cut));
  }
}

class Topic {
  private readonly listeners = new Map<string, Set<Listener>>();
  private readonly hearing = new Set<Heard>();
  /** Keys of the form `<head>#<rest>` listened on, by head (see {@link Topic.emitFamily}). */
  private readonly families = new Map<string, Set<string>>();
  private readonly pending = new Set<string>();
  private scheduled = false;

  on(key: string, fn: Listener): () => void {
    let set = this.listeners.get(key);
    if (!set) {
      this.listeners.set(key, (set = new Set()));
      this.family(key, (keys) => keys.add(key));
    }
    set.add(fn);
    return () => {
      set.delete(fn);
      if (set.size === 0 && this.listeners.get(key) === set) {
        this.listeners.delete(key);
        this.family(key, (keys) => keys.delete(key));
      }
    };
  }

  private family(key: string, change: (keys: Set<string>) => unknown): void {
    const cut = key.indexOf('#');
    if (cut < 0) return;
    const head = key.slice(0, cut);
    let keys = this.families.get(head);
    if (!keys) this.families.set(head, (keys = new Set()));
    change(keys);
    if (keys.size === 0) this.families.delete(head);
  }

  /** Wake `head` and every `<head>#…` key someone listens on. */
  emitFamily(head: string): void {
    for (const h of this.hearing) h.family(head);
    this.emit(head);
    for (const key of this.families.get(head) ?? []) this.emit(key);
  }

  /** Record in `h` every key emitted from now on, until the returned stop. */
  hear(h: Heard): () => void {
    this.hearing.add(h);
    return () => this.hearing.delete(h);
  }

  emit(key: string): void {
    for (const h of this.hearing) h.key(key);
    if (!this.listeners.has(key)) return;
    this.pending.add(key);
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => this.deliver());
  }

  /** Wake every key someone listens on (after missed wake-ups: each waiter re-checks once). */
  emitAll(): void {
    for (const h of this.hearing) h.everything = true;
    for (const key of this.listeners.keys()) this.emit(key);
  }

  /** Wake the listeners of every pending key now; call it only with the writes behind them committed. */
  deliver(): void {
    this.scheduled = false;
    const keys = [...this.pending];
    this.pending.clear();
    for (const k of keys) for (const fn of [...(this.listeners.get(k) ?? [])]) fn();
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
    const [mail, released, session] = [new Heard(), new Heard(), new Heard()];
    const stops = [this.mail.hear(mail), this.released.hear(released), this.session.hear(session)];
    return { mail, released, session, stop: () => stops.forEach((stop) => stop()) };
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
