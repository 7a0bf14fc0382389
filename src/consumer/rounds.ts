import type { Capability, ConsumerIdentity } from '../hub/contract/index.js';
import type { HubPort } from './hub-port.js';
import type { ConsumerSettings } from '../spool/index.js';
import type { Timers } from '../util/clock.js';
import { classifyClosed, classifyFailure, type Disposition, type FailureContext } from './classify.js';
import type { HubClock } from './hub-clock.js';
import type { SessionKeeper } from './session.js';

/**
 * One round of each way of draining: an SSE hold, a session long-poll, a principal drain.
 * A round returns null to go round again at once, or what went wrong for the caller to
 * apply (stop, back off, replace the session).
 */
export interface RoundContext {
  client: HubPort;
  capability: Capability;
  identity: ConsumerIdentity;
  settings: ConsumerSettings;
  clock: Timers;
  hubClock: HubClock;
  signal: AbortSignal;
  stopped(): boolean;
  /** The Hub answered (a stream's `open`): marks the consumer running; the budget is untouched. */
  opened(): void;
  /**
   * A round made progress — a drain answered, a stream delivered new entries or reached its hold
   * bound: refills the retry budget (and marks the consumer running). An `open` alone is not
   * progress: a Hub that fails every stream right after `open` must still reach 13.
   */
  connected(): void;
  failureContext(operation: string, sessionId: string | null): FailureContext;
  /** Verify, spool and ledger a batch (on the serial queue); resolves with how many were new. */
  deliver(raws: readonly unknown[], session: string | null): Promise<number>;
}

export async function streamRound(ctx: RoundContext, keeper: SessionKeeper, sid: string): Promise<Disposition | null> {
  const end = await ctx.client.openStream(sid, {
    signal: ctx.signal,
    capability: ctx.capability,
    onOpen: (ev, serverDate) => {
      ctx.opened();
      ctx.hubClock.note(serverDate, 'date');
      keeper.renewed({ id: ev.session, expires_at: ev.expires_at, lease_seconds: ev.lease_seconds });
    },
    onEntries: async (ev) => {
      // Only new mail is progress: a Hub that redelivers the same entries then fails must still reach 13.
      if ((await ctx.deliver(ev.messages, sid)) > 0) ctx.connected();
    },
  });
  if (ctx.stopped()) return null;
  switch (end.kind) {
    case 'hold_bound':
      // The normal end of every hold: the connect is the renewal, so reconnect at once; a whole hold is a success.
      ctx.connected();
      return null;
    case 'closed':
      return classifyClosed(end.reason, ctx.failureContext('stream', sid));
    case 'eof':
      return {
        kind: 'fault',
        message: `stream on ${sid}: the connection ended without a reconnect or closed event (dropped mid-hold)`,
        retryAfterSeconds: null,
      };
    case 'failure':
      return classifyFailure(end.failure, ctx.failureContext('stream connect', sid));
  }
}

export async function pollRound(ctx: RoundContext, keeper: SessionKeeper, sid: string): Promise<Disposition | null> {
  const r = await ctx.client.drain({ session: sid, signal: ctx.signal });
  if (ctx.stopped()) return null;
  if (!r.ok) return classifyFailure(r.failure, ctx.failureContext('drain', sid));
  ctx.connected();
  ctx.hubClock.note(r.serverDate, 'date');
  if (r.value.session) keeper.renewed(r.value.session);
  const fresh = await ctx.deliver(r.value.messages, sid);
  // A drain that brought new mail may have left more behind the batch limit: drain again at once.
  if (fresh === 0) await ctx.clock.sleep(ctx.settings.interval_seconds * 1000, ctx.signal);
  return null;
}

/**
 * GET /v1/inbox?wait=<the Hub's max wait>, no session: entries addressed to agent:<id> exactly.
 * `hold` false asks without waiting: while nothing has answered since the start or the last
 * fault, a held drain would leave the connection's standing unknown (its status line saying
 * connecting or reconnecting) until the clamp, 25 s, with the Hub reachable all along.
 */
export async function principalRound(ctx: RoundContext, hold: boolean): Promise<Disposition | null> {
  const started = ctx.clock.monotonic();
  const r = await ctx.client.drain({ wait: hold ? (ctx.capability.inbound.max_wait_seconds ?? 25) : undefined, signal: ctx.signal });
  if (ctx.stopped()) return null;
  if (!r.ok) return classifyFailure(r.failure, ctx.failureContext('principal drain', null));
  ctx.connected();
  ctx.hubClock.note(r.serverDate, 'date');
  const fresh = await ctx.deliver(r.value.messages, null);
  // The interval is a floor under a Hub that answers at once (an unacknowledged entry is
  // handed back immediately), not a pause after a held drain; after an unheld one the next holds.
  if (fresh === 0 && hold) await ctx.clock.sleep(ctx.settings.interval_seconds * 1000 - (ctx.clock.monotonic() - started), ctx.signal);
  return null;
}
