import { EXIT } from '../core/index.js';
import type { HubPort } from './hub-port.js';
import { forgetSession, type SessionRecord, type StateDir, type StoodDownSession } from '../spool/index.js';
import type { Acker } from './acker.js';
import { decideByCode, describeFailure, type Disposition } from './classify.js';
import { stop, type Stop } from './stops.js';

/**
 * `oh-hai session close` asked this connection to stand its session down. By the time this
 * runs the connection has stopped draining and ledgered its last records — the product
 * doc's "stop the connection, wait for its clean stop" — so closing now cannot race a
 * registration. Then: ack what the reader has read (so it does not bounce), close at the
 * Hub, forget the id. The stop returned is what the connection records, and what a reader
 * waiting on it relays.
 */
export interface StandDownDeps {
  client: HubPort;
  acker: Acker;
  stateDir: StateDir;
  session: SessionRecord;
  pinned: string | null;
  nowMs: () => number;
  /** Aborted when the requester's budget is spent. */
  signal: AbortSignal;
  log(text: string): void;
}

const dispositionText = (d: Disposition): string => (d.kind === 'stop' ? d.stop.message : d.message);

/** What happened at the Hub and here, in words a reader relays after `STOOD DOWN`. */
export function stoodDownText(s: StoodDownSession): string {
  const atHub =
    s.hub_state === 'closed'
      ? `closed it at the Hub${s.closed_at !== null ? ` at ${s.closed_at} (Hub's clock)` : ''} — mail still unacknowledged there bounces to its senders`
      : s.hub_state === 'not_found'
        ? 'found that the Hub no longer knows it'
        : `found it already ${s.hub_state.replace(/_/g, ' ')} at the Hub`;
  return `this agent stood its session ${s.id} (${s.address}) down (oh-hai session close): the connection stopped, ${atHub}, and forgot the id here. Run oh-hai bridge again only if this run should have a new address`;
}

export async function standDown(d: StandDownDeps): Promise<Stop> {
  const { id, address } = d.session;
  d.log(`standing ${id} down at the request of oh-hai session close`);
  try {
    const acked = await d.acker.flush();
    if (!acked.ok)
      d.log(`stand-down: the last acks did not go through (${dispositionText(acked.disposition)}); what was read but not acknowledged bounces as delivered`);
  } catch (e) {
    d.log(`stand-down: could not ledger the last acks (${(e as Error).message}); closing anyway`);
  }
  const closed = await d.client.closeSession(id, d.signal);
  if (!closed.ok && !(closed.failure.kind === 'http' && closed.failure.status === 404)) {
    return stop(
      EXIT.ok,
      'signal',
      `asked to stand ${id} down, but closing it at the Hub failed (${describeFailure(closed.failure)}): the connection stopped, and the session stays open and recorded here; oh-hai session close says what to do`,
    );
  }
  const state = closed.ok ? closed.value.state : 'not_found';
  if (state === 'active') {
    return stop(
      EXIT.ok,
      'signal',
      `closing ${id} at the Hub left it active (a Hub fault): the connection stopped, and the session stays open and recorded here; oh-hai session close says what to do`,
    );
  }
  const item: StoodDownSession = { id, address, hub_state: state, closed_at: closed.ok ? closed.value.closed_at : null, stood_down_at: d.nowMs() };
  forgetSession(d.stateDir, item);
  if (state === 'closed_by_operator') {
    // A human's kill-switch came first and outlives the session: the stop is theirs (14), not a stand-down.
    const decided = decideByCode(
      'session_closed_by_operator',
      `close session on ${id}: it was already closed by an operator`,
      { operation: 'close session', sessionId: id, pinned: d.pinned },
      {},
    );
    if (decided?.kind === 'stop') return decided.stop;
  }
  return stop(EXIT.stoodDown, 'session_closed', stoodDownText(item));
}
