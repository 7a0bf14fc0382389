/**
 * Runs tasks one at a time, in submission order. Everything that touches the spool, the
 * ledger or the acks goes through one of these, so a stream push, a cursor move and a
 * heartbeat can never interleave half-way through each other.
 */
export class Serial {
  private tail: Promise<unknown> = Promise.resolve();

  run<T>(task: () => Promise<T> | T): Promise<T> {
    const next = this.tail.then(task, task);
    this.tail = next.catch(() => undefined);
    return next;
  }

  /** Resolves once everything submitted so far has finished. */
  idle(): Promise<void> {
    return this.run(() => undefined);
  }
}
