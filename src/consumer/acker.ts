import type { AckResult, SessionLease } from '../hub/contract/index.js';
import type { HubResult } from '../hub/client/index.js';
import type { HubPort } from './hub-port.js';
import type { Cursor, Ledger, Spool, StateDir } from '../spool/index.js';
import { planAcknowledged, planDelivered, type AckBatch } from './acks.js';
import { classifyFailure, type Disposition } from './classify.js';

/**
 * The safety property's second half: `ack delivered` for what is durably spooled, and
 * `ack acknowledged` for exactly the records the reader's cursor has passed — the cursor is
 * validated against the spool first, so a stale one is rewound, never trusted forward.
 * A failed ack leaves the ledger as it was and is retried on the next flush.
 */
export interface AckerDeps {
  client: HubPort;
  ledger: Ledger;
  stateDir: StateDir;
  /** The consumer's spool, whose only writer knows where its last record ends. */
  spool: Pick<Spool, 'endsLastRecord'>;
  /** The session acks may name (current, active); null on the principal leg. */
  currentSession(): string | null;
  pinned: string | null;
  renewed(lease: SessionLease): void;
  log(text: string): void;
  signal: AbortSignal;
}

export type FlushResult = { ok: true; delivered: number; acknowledged: number } | { ok: false; disposition: Disposition };

export class Acker {
  private lastRewind: string | null = null;
  /**
   * The cursor as this acker last found it valid, unchanged. The consumer holds the spool's
   * only writer, under which a record never moves once written (appends only; a seal renames
   * its segment; compaction removes whole segments of printed records, and a cursor below the
   * oldest segment is valid): a valid cursor stays valid, so the same cursor read again needs
   * no second validation — a segment listing, two reads of the spool and a third of
   * cursor.json, in the delivery's turn (docs/performance.md, session 12). Nor does a cursor
   * just past the last record the writer appended (a reader that caught up). Compared by
   * value, not by mtime: the reader steps cursor.json in place, several times within one
   * mtime tick.
   */
  private valid: Cursor | null = null;

  constructor(private readonly d: AckerDeps) {}

  /** The last record the reader printed, validated against the spool. */
  cursorSeq(): number {
    const read = this.d.stateDir.readCursor();
    const known = (this.valid !== null && read.seq === this.valid.seq && read.offset === this.valid.offset) || this.d.spool.endsLastRecord(read);
    const check = known ? { cursor: read, rewound: null } : this.d.stateDir.checkedCursor(read);
    this.valid = check.rewound === null ? check.cursor : null;
    if (check.rewound !== null && check.rewound !== this.lastRewind) this.d.log(`cursor: ${check.rewound}`);
    this.lastRewind = check.rewound;
    return check.cursor.seq;
  }

  async flush(): Promise<FlushResult> {
    const pending = this.d.ledger.pending();
    if (pending.length === 0) return { ok: true, delivered: 0, acknowledged: 0 };
    const session = this.d.currentSession();
    const acknowledged = planAcknowledged(pending, this.cursorSeq(), session);
    const passed = new Set(acknowledged.flatMap((b) => b.ids));
    // `acknowledged` implies delivered: an entry the cursor already passed needs one ack, not two.
    const delivered = planDelivered(
      pending.filter((p) => !passed.has(p.id)),
      session,
    );
    let counts = { delivered: 0, acknowledged: 0 };
    for (const [kind, plan] of [
      ['delivered', delivered],
      ['acknowledged', acknowledged],
    ] as const) {
      for (const batch of plan) {
        const sent = await this.send(kind, batch);
        if (!sent.ok) return sent;
        counts = { ...counts, [kind]: counts[kind] + batch.ids.length };
      }
    }
    return { ok: true, ...counts };
  }

  private async send(kind: 'delivered' | 'acknowledged', batch: AckBatch): Promise<FlushResult> {
    const body = { ...(batch.session !== null ? { session: batch.session } : {}), [kind]: batch.ids };
    const r: HubResult<AckResult> = await this.d.client.ack(body, this.d.signal);
    if (!r.ok) {
      return {
        ok: false,
        disposition: classifyFailure(r.failure, { operation: `ack ${kind}`, sessionId: batch.session, pinned: this.d.pinned }),
      };
    }
    if (r.value.session) this.d.renewed(r.value.session);
    if (r.value.unknown.length > 0)
      this.d.log(`ack ${kind}: the Hub does not know ${r.value.unknown.join(', ')} (already resolved there); dropping them from the ledger`);
    if (kind === 'delivered') this.d.ledger.markDelivered(batch.ids);
    else this.d.ledger.acknowledge(batch.ids);
    // An id the Hub no longer knows (bounced, expired) will never be acknowledged there; keeping it would ack it forever.
    if (kind === 'delivered' && r.value.unknown.length > 0) this.d.ledger.acknowledge(r.value.unknown);
    return { ok: true, delivered: 0, acknowledged: 0 };
  }
}
