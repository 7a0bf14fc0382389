import { EXIT } from '../cli/exit-codes.js';
import type { Entry } from '../hub/contract/index.js';
import type { Ledger, SeenJti, Spool } from '../spool/index.js';
import { stop, type Stop } from './stops.js';
import { verifyBatch, type Signed, type VerifyContext } from './verify.js';

/**
 * The safety property's first half: verify → dedup on entry.id → append + fsync → ledger →
 * (then the acker sends `ack delivered`). Nothing reaches the spool unverified, no entry is
 * spooled twice, and a failed write is never retried.
 */
export interface IngestDeps {
  spool: Spool;
  ledger: Ledger;
  seen: SeenJti;
  log(text: string): void;
  /** Re-checked before every append: a compromised lock means another consumer may be writing. */
  lockHealthy(): boolean;
}

export type IngestResult = { ok: true; spooled: number; redelivered: number } | { ok: false; stop: Stop };

/** How many distinct refused entries are remembered so a redelivered refusal is logged once, not forever. */
const REFUSAL_MEMORY = 10_000;

export class Ingest {
  private readonly refusalsLogged = new Set<string>();

  constructor(private readonly d: IngestDeps) {}

  /**
   * `session` is the session the batch arrived under, null on the principal leg — whose
   * records carry the principal address in their `session` field instead (there is no
   * session; the address says which mailbox it came from and never reads as replaced).
   */
  run(raws: readonly unknown[], arrived: { session: string | null; address: string }, ctx: VerifyContext): IngestResult {
    const { session } = arrived;
    const verdict = verifyBatch(raws, ctx);
    if (!verdict.ok) {
      const message =
        `${verdict.rejection.message.replace(/\.$/, '')}. Nothing from this delivery was spooled or acknowledged: the Hub still holds it. ` +
        'Possible tampering — tell a human; do not retry past it.';
      this.d.log(message);
      return { ok: false, stop: stop(EXIT.verification, 'verification_failed', message) };
    }
    for (const r of verdict.refused) this.logRefusal(r.entry, r.reason);

    const fresh: Signed[] = [];
    const redelivered: Entry[] = [];
    const inBatch = new Set<string>();
    for (const a of verdict.accepted) {
      if (this.d.spool.hasEntry(a.entry.id) || inBatch.has(a.entry.id)) redelivered.push(a.entry);
      else {
        inBatch.add(a.entry.id);
        fresh.push(a);
      }
    }
    if (!this.d.lockHealthy()) return { ok: false, stop: lockLost() };
    try {
      if (fresh.length > 0) {
        const written = this.d.spool.append(fresh.map((a) => ({ type: 'entry' as const, session: session ?? arrived.address, entry: a.entry, signature: a.signature })));
        this.d.ledger.recordSpooled(
          written.flatMap((r) => (r.type === 'entry' ? [{ id: r.entry.id, seq: r.seq, session }] : [])),
        );
      }
      for (const a of [...verdict.accepted, ...verdict.refused]) this.d.seen.add(a.jti, a.t);
      this.d.seen.persist();
    } catch (e) {
      return { ok: false, stop: this.writeFailed(e) };
    }
    try {
      this.readmit(redelivered, session);
    } catch (e) {
      return { ok: false, stop: this.writeFailed(e) };
    }
    return { ok: true, spooled: fresh.length, redelivered: redelivered.length };
  }

  /**
   * A redelivered entry that is already spooled needs only its acks again. One the ledger
   * does not hold (a crash between the spool's fsync and the ledger's, or an acknowledged
   * ack the Hub lost) is re-entered with its record's seq and session, so the acker acks it
   * as the cursor says — never acknowledged just because it was seen before.
   */
  private readmit(entries: readonly Entry[], session: string | null): void {
    const found = entries.flatMap((e) => {
      const at = this.d.ledger.has(e.id) ? null : this.d.spool.spooledAt(e.id);
      // On the principal leg the spooled `session` is an address: the ledger keeps null.
      return at ? [{ id: e.id, seq: at.seq, session: session === null ? null : at.session }] : [];
    });
    this.d.ledger.recordSpooled(found);
  }

  /** A failed write or fsync is never retried (fsyncgate): stop acking and stop. */
  private writeFailed(e: unknown): Stop {
    const message =
      `${e instanceof Error ? e.message : String(e)}. Not retried: nothing more is acked, and every entry not yet acknowledged ` +
      'stays at the Hub and is redelivered to the next consumer, which recovers the spool first';
    this.d.log(message);
    return stop(EXIT.internal, 'spool_write_failed', message);
  }

  private logRefusal(entry: Entry, reason: string): void {
    if (this.refusalsLogged.has(entry.id)) return;
    if (this.refusalsLogged.size >= REFUSAL_MEMORY) this.refusalsLogged.clear();
    this.refusalsLogged.add(entry.id);
    this.d.log(`refused entry ${entry.id} (left unacked; the Hub keeps redelivering it, and this is logged once per consumer): ${reason}`);
  }
}

export function lockLost(): Stop {
  return stop(
    EXIT.internal,
    'lock_compromised',
    'consumer.lock was taken over while this consumer held it (it was paused or its lock went stale); stopping without acking anything more, since another consumer may be draining this entry',
  );
}
