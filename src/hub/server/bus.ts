/**
 * In-process wake-ups: new mail for an agent, a message whose state changed, a session
 * that ended. Emits are delivered on the next turn of the event loop (or right after a
 * group commit's COMMIT) and coalesced, so a listener never runs inside the writer's
 * transaction and a burst wakes it once.
 */
export type SessionEndReason = 'closed' | 'closed_by_operator' | 'lapsed';

type Listener = () => void;

class Topic {
  private readonly listeners = new Map<string, Set<Listener>>();
  private readonly pending = new Set<string>();
  private scheduled = false;

  on(key: string, fn: Listener): () => void {
    let set = this.listeners.get(key);
    if (!set) this.listeners.set(key, (set = new Set()));
    set.add(fn);
    return () => {
      set.delete(fn);
      if (set.size === 0 && this.listeners.get(key) === set) this.listeners.delete(key);
    };
  }

  emit(key: string): void {
    if (!this.listeners.has(key)) return;
    this.pending.add(key);
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => this.deliver());
  }

  /** Wake every key someone listens on (after missed wake-ups: each waiter re-checks once). */
  emitAll(): void {
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
  /** Keyed by agent id: an entry for the agent (any of its mailboxes) was queued or released. */
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
   * Deliver what is pending on every topic now rather than on the next turn: a group
   * commit calls it right after its COMMIT, so a push goes out with the batch's answers.
   */
  deliver(): void {
    this.mail.deliver();
    this.released.deliver();
    this.message.deliver();
  }
}
