import { EXIT } from '../core/index.js';
import type { Entry } from '../hub/contract/index.js';
import type { Ledger, SeenJti, Spool } from '../spool/index.js';
import { deliveredMessageId, hop, stamped, TRACE } from '../util/trace.js';
import { stop, type Stop } from './stops.js';
import { verifyBatch, type Signed, type VerifyContext } from './verify.js';

/**
 * The safety property's first half: verify → dedup on entry.id → append + fsync, then (in
 * `commit`, which every ack round calls first) the ledger and the seen-jti set, then `ack
 * delivered`. Nothing reaches the spool unverified, no entry is spooled twice, nothing is
 * acked before the ledger holds it, and a failed write is never retried. Deferring the
 * ledger to the ack round lets a burst of batches share its fsync: an entry spooled but not
 * yet ledgered when the process dies was never acked, so the Hub redelivers it and
 * `readmit` ledgers it from its spool record.
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
  /** Spooled, not yet in the ledger (nothing of these has been acked). */
  private unledgered: { id: string; seq: number; session: string | null }[] = [];

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
    if (TRACE) for (const raw of raws) hop('consumer.verified', deliveredMessageId(raw));

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
        const written = this.d.spool.append(
          fresh.map((a) => ({ type: 'entry' as const, session: session ?? arrived.address, entry: a.entry, signature: a.signature })),
        );
        for (const r of written) if (r.type === 'entry') this.unledgered.push({ id: r.entry.id, seq: r.seq, session });
        if (TRACE) for (const raw of raws) hop('consumer.written', deliveredMessageId(raw), stamped('spool.written'));
      }
    } catch (e) {
      return { ok: false, stop: this.writeFailed(e) };
    }
    for (const a of [...verdict.accepted, ...verdict.refused]) this.d.seen.add(a.jti, a.t);
    this.readmit(redelivered, session);
    return { ok: true, spooled: fresh.length, redelivered: redelivered.length };
  }

  /**
   * Make what was spooled ackable: ledger it and persist the seen jtis, before any ack is
   * sent. Throws the write error (the caller stops; never retried).
   */
  commit(): void {
    if (this.unledgered.length > 0) {
      this.d.ledger.recordSpooled(this.unledgered);
      this.unledgered = [];
    }
    this.d.ledger.cover(this.d.spool.lastSeq());
    this.d.seen.persist();
  }

  /**
   * A redelivered entry that is already spooled needs only its acks again. One the ledger
   * does not hold (a crash between the spool's fsync and the ledger's, or an acknowledged
   * ack the Hub lost) is re-entered with its record's seq and session, so the acker acks it
   * as the cursor says — never acknowledged just because it was seen before.
   */
  private readmit(entries: readonly Entry[], session: string | null): void {
    const waiting = new Set(this.unledgered.map((u) => u.id));
    for (const e of entries) {
      if (this.d.ledger.has(e.id) || waiting.has(e.id)) continue;
      const at = this.d.spool.spooledAt(e.id);
      // On the principal leg the spooled `session` is an address: the ledger keeps null.
      if (at) this.unledgered.push({ id: e.id, seq: at.seq, session: session === null ? null : at.session });
    }
  }

  /** A failed write or fsync is never retried (fsyncgate): stop acking and stop. */
  writeFailed(e: unknown): Stop {
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
