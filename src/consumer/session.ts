import type { Session, SessionLease } from '../hub/contract/index.js';
import type { HubClient } from '../hub/client/index.js';
import type { SessionHistoryItem, SessionRecord, Spool, StateEntry } from '../spool/index.js';
import type { Clock } from '../util/clock.js';
import { classifyFailure, decideByCode, endedCode, type Disposition, type FailureContext } from './classify.js';

/**
 * The Hub session this entry drains, and its record (session.json). Registering, adopting
 * and replacing a lapsed session all happen here; every renewal the Hub reports is written
 * down with the Hub's `expires_at` verbatim and our own clock's time of renewal.
 */
export interface SessionKeeperDeps {
  client: HubClient;
  entry: StateEntry;
  spool: Spool;
  clock: Clock;
  log(text: string): void;
  /** `sess_…` when the user pinned one. */
  pinned: string | null;
  /** The name to register under (unpinned). */
  name: string | null;
  /** Identifies the local agent session to the Hub: the state key. */
  clientKey: string;
  consumer: { home: string; host: string; pid: number };
  signal: AbortSignal;
}

export type Established = { ok: true; session: SessionRecord } | { ok: false; disposition: Disposition };

export class SessionKeeper {
  private record: SessionRecord | null = null;

  constructor(private readonly d: SessionKeeperDeps) {}

  get current(): SessionRecord | null {
    return this.record;
  }

  /** Pinned: read it and drain it if active. Unpinned: adopt the recorded session while it is active, else register. */
  async establish(): Promise<Established> {
    if (this.d.pinned !== null) return this.adoptPinned(this.d.pinned);
    const prior = this.d.entry.read('session');
    if (prior.state === 'unreadable') this.d.log(`session record unreadable (${prior.reason}); registering a session`);
    if (prior.state !== 'ok' || prior.value.pinned) return this.register(null, 'registered');
    const got = await this.d.client.getSession(prior.value.id, this.d.signal);
    if (!got.ok) {
      const disposition = classifyFailure(got.failure, this.context('read session', prior.value.id));
      if (disposition.kind !== 'reregister') return { ok: false, disposition };
      return this.register(prior.value, disposition.reason);
    }
    const s = got.value;
    if (s.state === 'active') return { ok: true, session: this.adopt(s, prior.value.history, prior.value.renewed_at) };
    // The kill-switch outlives the session: registering anew would be refused, and must not be tried.
    if (s.state === 'closed_by_operator') return { ok: false, disposition: this.ended(s.id, s.state, 'read session') };
    return this.register(prior.value, endedCode(s.state));
  }

  /** An unpinned session lapsed (or vanished) under us: register a new one and spool the address change. */
  async replace(reason: string): Promise<Established> {
    return this.register(this.record, reason);
  }

  /** The Hub reported a renewal (drain, stream open, ack with session). */
  renewed(lease: SessionLease): void {
    if (this.record === null || lease.id !== this.record.id) return;
    this.record = { ...this.record, expires_at: lease.expires_at, lease_seconds: lease.lease_seconds, renewed_at: this.d.clock.now() };
    this.d.entry.write('session', this.record);
  }

  private context(operation: string, sessionId: string | null): FailureContext {
    return { operation, sessionId, pinned: this.d.pinned };
  }

  /** The decision for a session read in a terminal state: the same as for presenting it. */
  private ended(id: string, state: 'lapsed' | 'closed' | 'closed_by_operator', operation: string): Disposition {
    const said = `${operation} on ${id}: the session is ${state}`;
    return decideByCode(endedCode(state), said, this.context(operation, id), {}) ?? { kind: 'fault', message: said, retryAfterSeconds: null };
  }

  private async adoptPinned(id: string): Promise<Established> {
    const got = await this.d.client.getSession(id, this.d.signal);
    if (!got.ok) return { ok: false, disposition: classifyFailure(got.failure, this.context('read pinned session', id)) };
    const s = got.value;
    if (s.state !== 'active') return { ok: false, disposition: this.ended(id, s.state, 'read pinned session') };
    const prior = this.d.entry.read('session');
    const same = prior.state === 'ok' && prior.value.id === id ? prior.value : null;
    return { ok: true, session: this.adopt(s, same?.history ?? [], same?.renewed_at ?? null) };
  }

  /**
   * Keep the recorded renewal when adopting without renewing (GET does not renew); the first
   * drain or stream open renews and records it.
   */
  private adopt(s: Session, history: SessionHistoryItem[], renewedAt: number | null): SessionRecord {
    this.record = {
      id: s.id,
      address: s.address,
      name: s.name,
      pinned: this.d.pinned !== null,
      lease_seconds: s.lease_seconds,
      expires_at: s.expires_at,
      renewed_at: renewedAt ?? this.d.clock.now(),
      history,
    };
    this.d.entry.write('session', this.record);
    this.d.log(`adopted session ${s.id} (${s.address}), expires ${s.expires_at} (Hub's clock)`);
    return this.record;
  }

  private async register(previous: SessionRecord | null, reason: string): Promise<Established> {
    const body = {
      client_key: this.d.clientKey,
      ...(this.d.name !== null ? { name: this.d.name } : {}),
      home: this.d.consumer.home,
      host: this.d.consumer.host,
      pid: this.d.consumer.pid,
    };
    const created = await this.d.client.createSession(body, this.d.signal);
    if (!created.ok) {
      const disposition = classifyFailure(created.failure, this.context('register session', null));
      // A fresh registration that is "not found" or "lapsed" is a Hub fault, not something to loop on.
      if (disposition.kind === 'reregister') return { ok: false, disposition: { kind: 'fault', message: disposition.message, retryAfterSeconds: null } };
      return { ok: false, disposition };
    }
    const s = created.value;
    const now = this.d.clock.now();
    const history = previous === null ? [] : previous.id === s.id ? previous.history : [...previous.history, { id: previous.id, address: previous.address, replaced_at: now, reason }];
    if (previous !== null && previous.id !== s.id) {
      // The transition goes into the spool before the record names the new session, so a
      // crash in between re-registers (adopting by name) and at worst spools it twice.
      this.d.spool.append([
        {
          type: 'transition',
          event: 'address_changed',
          from_session: previous.id,
          to_session: s.id,
          from_address: previous.address,
          to_address: s.address,
          reason,
        },
      ]);
      this.d.log(`address changed: ${previous.address} → ${s.address} (${reason})`);
    } else {
      this.d.log(`${reason} session ${s.id} (${s.address}), expires ${s.expires_at} (Hub's clock)`);
    }
    this.record = {
      id: s.id,
      address: s.address,
      name: s.name,
      pinned: false,
      lease_seconds: s.lease_seconds,
      expires_at: s.expires_at,
      renewed_at: now,
      history,
    };
    this.d.entry.write('session', this.record);
    return { ok: true, session: this.record };
  }
}

