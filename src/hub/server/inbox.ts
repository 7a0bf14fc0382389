import type { AckRequest, ConsumerIdentity, Delivery } from '../contract/index.js';
import type { HubCore } from './core.js';
import type { Signer } from './delivery.js';
import { entryById, hasPending, pendingPage, setEntryState, type EntryRow, type Mailbox, type PageBound } from './entries.js';
import { bad, good, type Answer, type ApiError } from './http.js';
import { touchPrincipal } from './presence.js';
import { current, endedError, presentSession, sessionById, type SessionRow } from './sessions.js';
import { markAcknowledged, markDelivered, markUndeliverable } from './track.js';

/** A held request re-checks at least this often, whatever woke it (§4). */
const RECHECK_MS = 1000;

export interface DrainRequest {
  session: string | null;
  limit: number;
  /** Seconds to hold when nothing is pending; already clamped. */
  waitSeconds: number;
  consumer: ConsumerIdentity | null;
}

export interface Drained {
  lease: SessionRow | null;
  deliveries: Delivery[];
}

/**
 * Wait until `ready()` says so, the deadline (monotonic ms) passes or the client goes away:
 * woken early by an in-process event on `key`, and re-checked every second regardless.
 */
export function hold(core: HubCore, topic: 'mail' | 'message', key: string, deadlineMs: number, signal: AbortSignal, ready: () => boolean): Promise<void> {
  return new Promise((resolve) => {
    let timer: NodeJS.Timeout | undefined;
    const finish = () => {
      clearTimeout(timer);
      off();
      signal.removeEventListener('abort', finish);
      resolve();
    };
    const check = () => {
      if (signal.aborted || ready() || core.clock.monotonic() >= deadlineMs) {
        finish();
        return;
      }
      clearTimeout(timer);
      timer = setTimeout(check, Math.max(0, Math.min(RECHECK_MS, deadlineMs - core.clock.monotonic())));
    };
    const off = core.bus[topic].on(key, check);
    signal.addEventListener('abort', finish);
    check();
  });
}

/**
 * `GET /v1/inbox` (§4): the session drain (presents and renews) or the principal drain
 * (presence heartbeat). What it writes — the renewal, presence, first-claim-wins claims —
 * commits in a group batch before the answer; the hold in between only reads.
 */
export async function drain(core: HubCore, signer: Signer, agentId: string, req: DrainRequest, signal: AbortSignal): Promise<Answer<Drained>> {
  const box: Mailbox = { agentId, sessionId: req.session };
  // `limit` is the client's; the byte bound is the Hub's, so one answer stays small whatever is pending.
  const bound: PageBound = { limit: req.limit, maxBytes: core.config.pageBytes };
  const first = await core.commits.run((): Answer<{ lease: SessionRow | null; rows: EntryRow[] }> => {
    let lease: SessionRow | null = null;
    if (req.session !== null) {
      const presented = presentSession(core, agentId, req.session, { consumer: req.consumer, connect: true });
      if (!presented.ok) return presented;
      lease = presented.value;
    } else {
      touchPrincipal(core, agentId);
    }
    return good({ lease, rows: pendingPage(core, box, 0, bound) });
  });
  if (!first.ok) return first;
  let rows = first.value.rows;
  const deadline = core.clock.monotonic() + req.waitSeconds * 1000;
  // Another session may claim a principal entry between the wake-up and the take: hold again.
  while (rows.length === 0 && req.waitSeconds > 0 && !signal.aborted && core.clock.monotonic() < deadline) {
    let ended: SessionRow | null = null;
    await hold(core, 'mail', agentId, deadline, signal, () => {
      if (req.session !== null) {
        const now = current(core, sessionById(core, req.session)!);
        if (now.state !== 'active') {
          ended = now;
          return true;
        }
      }
      return hasPending(core, box);
    });
    if (ended) return endedError(ended);
    rows = await core.commits.run(() => {
      if (req.session === null) touchPrincipal(core, agentId);
      else core.db.prepare('UPDATE sessions SET seen_at = ? WHERE id = ?').run(core.clock.now(), req.session);
      // A client that left takes nothing: a principal entry stays free for another session.
      return signal.aborted ? [] : pendingPage(core, box, 0, bound);
    });
  }
  return good({ lease: first.value.lease, deliveries: rows.map((r) => signer.deliver(r, 'drain')) });
}

export interface Acked {
  delivered: number;
  acknowledged: number;
  unknown: string[];
  lease: SessionRow | null;
}

/**
 * `POST /v1/inbox/ack` (§6, §12): any entry addressed to this agent, under any of its
 * sessions. Idempotent; only `acknowledged` stops redelivery.
 */
export function ack(core: HubCore, agentId: string, req: AckRequest): Answer<Acked> {
  return core.db.transaction((): Answer<Acked> => {
    let lease: SessionRow | null = null;
    if (req.session !== undefined) {
      const presented = presentSession(core, agentId, req.session, { consumer: null, connect: false });
      if (!presented.ok) {
        const e = presented.error;
        // §12: an ack naming a session that is not active is 410, whatever ended it.
        return e.code.startsWith('session_') && e.code !== 'session_not_found' ? bad(410, e.code, e.message, e.details) : presented;
      }
      lease = presented.value;
    }
    const unknown: string[] = [];
    const known = (id: string) => {
      const row = entryById(core, id);
      if (row && row.to_agent === agentId) return row;
      if (!unknown.includes(id)) unknown.push(id);
      return null;
    };
    let delivered = 0;
    for (const id of req.delivered ?? []) {
      const row = known(id);
      if (!row) continue;
      delivered += 1;
      if (row.delivered === 0) core.db.prepare('UPDATE entries SET delivered = 1 WHERE id = ?').run(id);
      if (row.message_id !== null && row.state === 'pending') markDelivered(core, row.message_id);
    }
    let acknowledged = 0;
    for (const id of req.acknowledged ?? []) {
      const row = known(id);
      if (!row) continue;
      acknowledged += 1;
      if (row.state !== 'pending') continue;
      core.db.prepare(`UPDATE entries SET delivered = 1, state = 'acknowledged' WHERE id = ?`).run(id);
      if (row.message_id !== null) markAcknowledged(core, row.message_id);
    }
    return good({ delivered, acknowledged, unknown, lease });
  })();
}

/** Entries nobody acknowledged within the message TTL expire; their senders get `expired` receipts. */
export function sweepExpired(core: HubCore): void {
  const cutoff = core.clock.now() - core.config.messageTtlSeconds * 1000;
  const due = core.db.prepare(`SELECT id, message_id FROM entries WHERE state = 'pending' AND created_at <= ?`).all(cutoff) as {
    id: string;
    message_id: string | null;
  }[];
  if (due.length === 0) return;
  core.db.transaction(() => {
    for (const e of due) {
      setEntryState(core, e.id, 'expired');
      if (e.message_id !== null) markUndeliverable(core, e.message_id, 'message_ttl');
    }
  })();
}

/** Shown when a drain or stream is refused because the account switched messaging off. */
export const MESSAGING_OFF: ApiError = {
  status: 403,
  code: 'messaging_disabled',
  message: 'agent messaging is switched off for this account (the agent_messaging setting); a human can switch it on with oh-hai hub messaging on',
};
