import type { AckRequest, ConsumerIdentity, Delivery } from '../contract/index.js';
import type { HubCore } from './core.js';
import { coalesced } from './coalesce.js';
import type { Signer } from './delivery.js';
import { entryById, hasPending, pendingPage, type EntryRow, type Mailbox, type PageBound } from './entries.js';
import { bad, good, type Answer, type ApiError } from './http.js';
import { touchPrincipal } from './presence.js';
import { current, endedError, presentSession, sessionById, type SessionRow } from './sessions.js';
import type { Store, Tx } from './sql.js';
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
 * woken early by an event on `key` (from this instance, or another one through the
 * store), and re-checked every second regardless.
 */
export function hold(
  core: HubCore,
  topic: 'mail' | 'message',
  key: string,
  deadlineMs: number,
  signal: AbortSignal,
  ready: () => Promise<boolean>,
): Promise<void> {
  return new Promise((resolve) => {
    let timer: NodeJS.Timeout | undefined;
    let done = false;
    core.held[topic] += 1;
    const finish = () => {
      if (done) return;
      done = true;
      core.held[topic] -= 1;
      clearTimeout(timer);
      off();
      signal.removeEventListener('abort', finish);
      resolve();
    };
    // One check at a time; a wake-up during one asks for another right after it.
    const check = coalesced(async () => {
      if (done) return;
      let met = false;
      try {
        met = signal.aborted || core.clock.monotonic() >= deadlineMs || (await ready());
      } catch {
        // A store that failed to answer is asked again at the next re-check.
      }
      if (met) return finish();
      clearTimeout(timer);
      timer = setTimeout(() => void check(), Math.max(0, Math.min(RECHECK_MS, deadlineMs - core.clock.monotonic())));
    });
    const off = core.bus[topic].on(key, () => void check());
    signal.addEventListener('abort', finish);
    void check();
  });
}

/** The session as a held drain sees it: ended (lapsing it if its lease has passed), or null while it is active. */
async function endedNow(core: HubCore, store: Store, agentId: string, sessionId: string): Promise<SessionRow | null> {
  const seen = await sessionById(store.read, sessionId);
  if (seen !== null && seen.state === 'active' && seen.expires_at > core.clock.now()) return null;
  const now = await store.write(async (tx) => {
    const r = await sessionById(tx, sessionId);
    return r && r.agent_id === agentId ? current(core, tx, r) : r;
  });
  return now !== null && now.state !== 'active' ? now : null;
}

/**
 * `GET /v1/inbox` (§4): the session drain (presents and renews) or the principal drain
 * (presence heartbeat). What it writes — the renewal, presence, first-claim-wins claims —
 * commits before the answer; the hold in between only reads.
 */
export async function drain(core: HubCore, store: Store, signer: Signer, agentId: string, req: DrainRequest, signal: AbortSignal): Promise<Answer<Drained>> {
  const box: Mailbox = { agentId, sessionId: req.session };
  // `limit` is the client's; the byte bound is the Hub's, so one answer stays small whatever is pending.
  const bound: PageBound = { limit: req.limit, maxBytes: core.config.pageBytes };
  const first = await store.write(async (tx): Promise<Answer<{ lease: SessionRow | null; rows: EntryRow[] }>> => {
    let lease: SessionRow | null = null;
    if (req.session !== null) {
      const presented = await presentSession(core, tx, agentId, req.session, { consumer: req.consumer, connect: true });
      if (!presented.ok) return presented;
      lease = presented.value;
    } else {
      await touchPrincipal(tx, agentId);
    }
    return good({ lease, rows: (await pendingPage(tx, box, 0, bound)).rows });
  });
  if (!first.ok) return first;
  let rows = first.value.rows;
  const deadline = core.clock.monotonic() + req.waitSeconds * 1000;
  // Another session may claim a principal entry between the wake-up and the take: hold again.
  while (rows.length === 0 && req.waitSeconds > 0 && !signal.aborted && core.clock.monotonic() < deadline) {
    let ended: SessionRow | null = null;
    await hold(core, 'mail', agentId, deadline, signal, async () => {
      if (req.session !== null) {
        ended = await endedNow(core, store, agentId, req.session);
        if (ended) return true;
      }
      return hasPending(store.read, box);
    });
    if (ended) return endedError(ended);
    rows = await store.write(async (tx) => {
      if (req.session === null) await touchPrincipal(tx, agentId);
      else await tx.run('UPDATE sessions SET seen_at = ? WHERE id = ?', tx.now, req.session);
      // A client that left takes nothing: a principal entry stays free for another session.
      return signal.aborted ? [] : (await pendingPage(tx, box, 0, bound)).rows;
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
 * sessions. Idempotent; only `acknowledged` stops redelivery. Each entry is read under its
 * row lock, so two acks of one entry racing on two instances move its message once.
 */
export async function ack(core: HubCore, tx: Tx, agentId: string, req: AckRequest): Promise<Answer<Acked>> {
  let lease: SessionRow | null = null;
  if (req.session !== undefined) {
    const presented = await presentSession(core, tx, agentId, req.session, { consumer: null, connect: false });
    if (!presented.ok) {
      const e = presented.error;
      // §12: an ack naming a session that is not active is 410, whatever ended it.
      return e.code.startsWith('session_') && e.code !== 'session_not_found' ? bad(410, e.code, e.message, e.details) : presented;
    }
    lease = presented.value;
  }
  const unknown: string[] = [];
  const known = async (id: string) => {
    const row = await entryById(tx, id, true);
    if (row && row.to_agent === agentId) return row;
    if (!unknown.includes(id)) unknown.push(id);
    return null;
  };
  let delivered = 0;
  for (const id of req.delivered ?? []) {
    const row = await known(id);
    if (!row) continue;
    delivered += 1;
    if (row.delivered === 0) await tx.run('UPDATE entries SET delivered = 1 WHERE id = ?', id);
    if (row.message_id !== null && row.state === 'pending') await markDelivered(tx, row.message_id);
  }
  let acknowledged = 0;
  for (const id of req.acknowledged ?? []) {
    const row = await known(id);
    if (!row) continue;
    acknowledged += 1;
    if (row.state !== 'pending') continue;
    await tx.run(`UPDATE entries SET delivered = 1, state = 'acknowledged' WHERE id = ?`, id);
    if (row.message_id !== null) await markAcknowledged(tx, row.message_id);
  }
  return good({ delivered, acknowledged, unknown, lease });
}

/**
 * Entries one sweep expires at most. Expiring every due entry in one transaction held `entries`
 * for 45 s at 1,000,000 due after a long downtime (session 20, lock12), blocking a migration and
 * every writer on those rows. A batch of 500 took 0.9–1.1 s on PostgreSQL at load 6 (five round
 * trips an entry, with its receipt), longer than a migration's wait for a table before it lets go
 * and tries again (half of deadlock_timeout, postgres/schema.ts); 200 took 0.3–0.4 s there, SQLite 55 ms.
 */
export const EXPIRE_BATCH = 200;

/**
 * Entries nobody acknowledged within the message TTL expire, the oldest {@link EXPIRE_BATCH} at a
 * time; their senders get `expired` receipts. True when the batch was full: more may be due, and
 * the caller sweeps again at once rather than a tick later.
 */
export async function sweepExpired(core: HubCore, tx: Tx): Promise<boolean> {
  const cutoff = tx.now - core.config.messageTtlSeconds * 1000;
  const due = await tx.all<{ id: string; message_id: string | null }>(
    `SELECT id, message_id FROM entries WHERE state = 'pending' AND created_at <= ? ORDER BY created_at LIMIT ${EXPIRE_BATCH}`,
    cutoff,
  );
  for (const e of due) {
    // Another instance's sweep may have taken it first: only the one that changes the row goes on.
    if ((await tx.run(`UPDATE entries SET state = 'expired' WHERE id = ? AND state = 'pending'`, e.id)) !== 1) continue;
    if (e.message_id !== null) await markUndeliverable(tx, e.message_id, 'message_ttl');
  }
  return due.length === EXPIRE_BATCH;
}
/** Shown when a drain or stream is refused because the account switched messaging off. */
export const MESSAGING_OFF: ApiError = {
  status: 403,
  code: 'messaging_disabled',
  message: 'agent messaging is switched off for this account (the agent_messaging setting); a human can switch it on with oh-hai hub messaging on',
};
