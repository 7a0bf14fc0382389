/** Why the Hub ended an open stream with `event: closed`. */
export type StreamCloseReason = 'closed' | 'closed_by_operator' | 'lapsed' | 'replaced';

/** What the Hub needs to know about one open SSE stream. */
export interface OpenStream {
  sessionId: string;
  /** The MA2H-Consumer that opened it; null when the request was not a consumer. */
  consumer: { home: string; host: string; pid: number } | null;
  /**
   * When its connect sent the renewal (the Hub's monotonic clock): the renewal, once committed,
   * wrote the session (and a consumer's holder) seen at an instant no earlier than this.
   */
  renewedAt: number;
  /** Send `event: closed {"reason"}` and end the stream. */
  close(reason: StreamCloseReason): void;
  /** End the stream without an event (superseded by its own consumer). */
  end(): void;
  /**
   * The Hub is stopping: send `event: reconnect {"reason":"shutdown"}` and end the stream.
   * Resolves once the response is written out (or the client is gone).
   */
  shutdown(): Promise<void>;
}

/** The open streams, by session: holder "seen", reachability, and the events that end them. */
export class StreamRegistry {
  private readonly bySession = new Map<string, Set<OpenStream>>();
  /** Set by {@link retire}: this instance holds no stream from then on. */
  private retired = false;

  add(s: OpenStream): void {
    // A connect whose renewal committed as the instance retired: told to go elsewhere once `open` is written.
    if (this.retired) {
      void s.shutdown();
      return;
    }
    let set = this.bySession.get(s.sessionId);
    if (!set) this.bySession.set(s.sessionId, (set = new Set()));
    set.add(s);
  }

  remove(s: OpenStream): void {
    const set = this.bySession.get(s.sessionId);
    if (!set) return;
    set.delete(s);
    if (set.size === 0) this.bySession.delete(s.sessionId);
  }

  /** Streams open now. */
  count(): number {
    let n = 0;
    for (const set of this.bySession.values()) n += set.size;
    return n;
  }

  isOpen(sessionId: string): boolean {
    return (this.bySession.get(sessionId)?.size ?? 0) > 0;
  }

  /** Whether a stream opened by this consumer home is open on the session. */
  heldBy(sessionId: string, home: string): boolean {
    return [...(this.bySession.get(sessionId) ?? [])].some((s) => s.consumer?.home === home);
  }

  /** The session stopped: every stream on it gets `event: closed` with the reason. */
  closeSession(sessionId: string, reason: StreamCloseReason): void {
    for (const s of [...(this.bySession.get(sessionId) ?? [])]) s.close(reason);
  }

  /**
   * A new consumer took the session: streams of another pid are told `replaced`; an older
   * stream of the same consumer process is ended quietly (it reconnected over itself).
   */
  supersede(sessionId: string, by: { home: string; pid: number }, except: OpenStream | null): void {
    for (const s of [...(this.bySession.get(sessionId) ?? [])]) {
      if (s === except || s.consumer === null) continue;
      if (s.consumer.home === by.home && s.consumer.pid === by.pid) s.end();
      else s.close('replaced');
    }
  }

  /**
   * Sessions with a stream open here whose connect renewed them at `before` (monotonic) or
   * earlier, and the consumer home of each such stream.
   */
  held(before: number): Array<{ sessionId: string; home: string | null }> {
    const out: Array<{ sessionId: string; home: string | null }> = [];
    for (const [sessionId, set] of this.bySession) for (const s of set) if (s.renewedAt <= before) out.push({ sessionId, home: s.consumer?.home ?? null });
    return out;
  }

  sessions(): string[] {
    return [...this.bySession.keys()];
  }

  /**
   * Another instance decided who holds the session: every stream here of another consumer
   * (home and pid) is told `replaced`.
   */
  keepHolder(sessionId: string, holder: { home: string; pid: number }): void {
    for (const s of [...(this.bySession.get(sessionId) ?? [])]) {
      if (s.consumer !== null && (s.consumer.home !== holder.home || s.consumer.pid !== holder.pid)) s.close('replaced');
    }
  }

  /**
   * This instance may not serve the database any more (a newer version migrated it): every open
   * stream, and every one registered later, is told `reconnect {"reason":"shutdown"}` and ended, as
   * at a stop, so its client reconnects through the balancer to an instance that may. Nothing is
   * lost: a push is provisional, and the next connect pushes whatever was not acknowledged.
   */
  retire(): void {
    this.retired = true;
    for (const set of this.bySession.values()) for (const s of [...set]) void s.shutdown();
  }

  /** The Hub is stopping: tell every open stream so, and resolve once each has been written out. */
  async shutdownAll(): Promise<void> {
    await Promise.all([...this.bySession.values()].flatMap((set) => [...set].map((s) => s.shutdown())));
  }
}
