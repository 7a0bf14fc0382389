import type { Clock } from '../../util/clock.js';

/**
 * Who a token is (and the account's messaging switch, read with it), remembered for at most
 * `ttlMs` so a busy sender's requests do not ask the store again: on PostgreSQL the credential
 * statement was one round trip and one pool connection of every send's five. Only answers that
 * let a request in are remembered (a new token is never refused from here). Every committed change
 * to a credential or the switch, on this instance or another (its NOTIFY), forgets everything at
 * once (server.ts: the `credentials` wake-up), and so does a listener that reconnected (NOTIFYs
 * may have been lost meanwhile). `ttlMs` bounds what a lost notification (or a change made
 * by an earlier build, or by hand in SQL) can leave in use: docs/deploy.md "Credentials".
 */
export class CredentialCache<V> {
  private readonly known = new Map<string, { value: V; until: number }>();
  /** Bumped by every forget: a read that started before one is not remembered (it may have read the old row). */
  private generation = 0;

  constructor(
    private readonly clock: Clock,
    private readonly ttlMs: number,
    private readonly max = 10_000,
  ) {}

  get(hash: string): V | undefined {
    const hit = this.known.get(hash);
    if (hit === undefined) return undefined;
    if (this.clock.monotonic() < hit.until) return hit.value;
    this.known.delete(hash);
    return undefined;
  }

  /** Taken before the store is asked; hand it to {@link remember}. */
  begin(): number {
    return this.generation;
  }

  remember(hash: string, value: V, since: number): void {
    if (this.ttlMs <= 0 || since !== this.generation) return;
    this.known.delete(hash);
    // Insertion order is age order: past the cap the oldest goes.
    if (this.known.size >= this.max) this.known.delete(this.known.keys().next().value!);
    this.known.set(hash, { value, until: this.clock.monotonic() + this.ttlMs });
  }

  forgetAll(): void {
    this.generation += 1;
    this.known.clear();
  }
}
