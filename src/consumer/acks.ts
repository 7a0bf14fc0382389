/**
 * Which acks to send. An entry is `ack delivered` once it is durably spooled, and `ack
 * acknowledged` exactly when the reader's cursor has passed its record — never before.
 * An ack names the current session (a renewal for free); entries that arrived under a
 * session this entry has since replaced are acked without `session` (MA2H §12), since
 * naming a session that is no longer active is a 410.
 */
export interface PendingAck {
  id: string;
  seq: number;
  /** The session the entry arrived under; null on the principal leg. */
  session: string | null;
  state: 'spooled' | 'delivered';
}

export interface AckBatch {
  session: string | null;
  ids: string[];
}

/** The Hub caps request bodies; ids are ≤ 128 bytes, so this stays far below any sane cap. */
export const ACK_CHUNK = 500;

function batches(items: readonly PendingAck[], currentSession: string | null): AckBatch[] {
  const underCurrent: string[] = [];
  const underReplaced: string[] = [];
  for (const item of items) {
    if (currentSession !== null && item.session === currentSession) underCurrent.push(item.id);
    else underReplaced.push(item.id);
  }
  const out: AckBatch[] = [];
  const chunk = (session: string | null, ids: string[]) => {
    for (let i = 0; i < ids.length; i += ACK_CHUNK) out.push({ session, ids: ids.slice(i, i + ACK_CHUNK) });
  };
  chunk(currentSession, underCurrent);
  chunk(null, underReplaced);
  return out;
}

/** Spooled entries whose `ack delivered` has not been confirmed by the Hub yet. */
export function planDelivered(pending: readonly PendingAck[], currentSession: string | null): AckBatch[] {
  return batches(
    pending.filter((p) => p.state === 'spooled'),
    currentSession,
  );
}

/** Entries the cursor has passed. `cursorSeq` is the last record the reader printed. */
export function planAcknowledged(pending: readonly PendingAck[], cursorSeq: number, currentSession: string | null): AckBatch[] {
  return batches(
    pending.filter((p) => p.seq <= cursorSeq),
    currentSession,
  );
}
