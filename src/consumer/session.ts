import type { Session, SessionLease } from '../hub/contract/index.js';
import type { HubPort } from './hub-port.js';
import {
  clearStoodDown,
  stoodDownSessions,
  succession,
  type SessionHistoryItem,
  type SessionRecord,
  type Spool,
  type StateDir,
  type StoodDownSession,
} from '../spool/index.js';
import type { Clock } from '../util/clock.js';
import { classifyFailure, decideByCode, endedCode, type Disposition, type FailureContext } from './classify.js';

/**
 * The Hub session this entry drains, and its record (session.json). Registering, adopting
 * and replacing a lapsed session all happen here; every renewal the Hub reports is written
 * down with the Hub's `expires_at` verbatim and our own clock's time of renewal.
 */
export interface SessionKeeperDeps {
  client: HubPort;
  stateDir: StateDir;
  spool: Spool;
  clock: Clock;
  log(text: string): void;
  /** The Hub session the user pinned (`sess_…`, or an id the Hub confirmed: probePin). */
  pinned: string | null;
  /** The name to register under (unpinned). */
  name: string | null;
  /** Identifies the local agent session to the Hub: the state key. */
  clientKey: string;
  consumer: { home: string; host: string; pid: number };
  signal: AbortSignal;
}

/** What the Hub says a pin candidate is: one of this agent's sessions (then it pins), a name, or nothing yet. */
export type PinProbe = { kind: 'id' } | { kind: 'name'; why: string } | { kind: 'undecided'; disposition: Disposition };

/**
 * Is `value` (an unpinned --session / MA2H_SESSION_ID value) the id of a session of this
 * agent? `GET /v1/sessions/<value>` does not renew (MA2H §3). Anything the Hub answers other
 * than that session — 404, a session of another agent, a refusal of the id — makes it a name;
 * only what a retry could change (a fault) or must stop (credentials) leaves it undecided.
 */
export async function probePin(client: Pick<HubPort, 'getSession'>, value: string, agentId: string, signal: AbortSignal): Promise<PinProbe> {
  const got = await client.getSession(value, signal);
  if (got.ok) {
    const s = got.value;
    if (s.id !== value) return { kind: 'name', why: `the Hub answered with another session, ${s.id}` };
    return s.agent_id === agentId ? { kind: 'id' } : { kind: 'name', why: `the Hub's session ${s.id} belongs to agent ${s.agent_id}` };
  }
  const f = got.failure;
  const ctx: FailureContext = { operation: 'read session', sessionId: value, pinned: null };
  if (f.kind === 'http' && f.status >= 400 && f.status < 500 && f.status !== 401 && f.status !== 408 && f.status !== 429 && f.code !== 'messaging_disabled') {
    return { kind: 'name', why: `the Hub answered HTTP ${f.status} ${f.code}` };
  }
  return { kind: 'undecided', disposition: classifyFailure(f, ctx) };
}

export type Established = { ok: true; session: SessionRecord } | { ok: false; disposition: Disposition };

/** The session a new one replaces: the transition is spooled from it, and it joins the history. */
type Predecessor = Pick<SessionRecord, 'id' | 'address' | 'history'>;

/** A session this entry holds, as far as adopting it again needs. */
type Recorded = Predecessor & Pick<SessionRecord, 'renewed_at'>;

const STOOD_DOWN_REASON: Record<StoodDownSession['hub_state'], string> = {
  closed: 'session_closed',
  closed_by_operator: 'session_closed_by_operator',
  lapsed: 'session_lapsed',
  not_found: 'session_not_found',
};

const asHistory = (s: StoodDownSession): SessionHistoryItem => ({
  id: s.id,
  address: s.address,
  replaced_at: s.stood_down_at,
  reason: STOOD_DOWN_REASON[s.hub_state],
});

export class SessionKeeper {
  private record: SessionRecord | null = null;
  /** Sessions stood down here (session close forgot them) that the next session replaces. */
  private stood: StoodDownSession[] = [];

  constructor(private readonly d: SessionKeeperDeps) {}

  get current(): SessionRecord | null {
    return this.record;
  }

  /**
   * Pinned: read it and drain it if active. Unpinned: adopt the recorded session (or the one the
   * spool says replaced it) while it is active, else register.
   */
  async establish(): Promise<Established> {
    if (this.d.pinned !== null) return this.adoptPinned(this.d.pinned);
    this.stood = stoodDownSessions(this.d.stateDir);
    const prior = this.d.stateDir.read('session');
    if (prior.state === 'unreadable') this.d.log(`session record unreadable (${prior.reason}); registering a session`);
    const recorded = prior.state === 'ok' && !prior.value.pinned ? prior.value : null;
    // A session stood down here is what the new one replaces: its unread mail is not fresh.
    const last = this.stood.at(-1);
    const replacing = recorded ?? (last === undefined ? null : { id: last.id, address: last.address, history: this.stood.slice(0, -1).map(asHistory) });
    const current = this.spooledSuccessor(replacing) ?? recorded;
    if (current === null) return last === undefined ? this.register(null, 'registered') : this.register(replacing, STOOD_DOWN_REASON[last.hub_state]);
    const got = await this.d.client.getSession(current.id, this.d.signal);
    if (!got.ok) {
      const disposition = classifyFailure(got.failure, this.context('read session', current.id));
      if (disposition.kind !== 'reregister') return { ok: false, disposition };
      return this.register(current, disposition.reason);
    }
    const s = got.value;
    if (s.state === 'active') return { ok: true, session: this.adopt(s, current.history, current.renewed_at) };
    // A session a human closed stays closed, but the stop on registering may have been lifted
    // since: only the Hub knows, so ask it. While the stop holds, the registration is refused
    // (403 session_closed_by_operator, exit 14) before anything is spooled or recorded.
    return this.register(current, endedCode(s.state));
  }

  /**
   * The session the spool says replaced `from` — and whatever replaced that — or null when it
   * names none. The transition is spooled before session.json names the new session, so a
   * connection stopped between the two left a spool a step ahead of the record: that session
   * is the one to read, adopt, or replace in turn. Registering anew would announce a second
   * address change for the one already spooled (and, without a name, abandon the session the
   * spool announced).
   */
  private spooledSuccessor(from: Predecessor | null): Recorded | null {
    if (from === null) return null;
    let at: Predecessor = from;
    let found: Recorded | null = null;
    for (const t of succession(from.id, (id) => this.d.spool.successorOf(id))) {
      const spooledAt = Date.parse(t.received_at);
      const when = Number.isFinite(spooledAt) ? spooledAt : this.d.clock.now();
      const history = [...at.history, { id: at.id, address: at.address, replaced_at: when, reason: t.reason }];
      // Registered when the transition was spooled: the lease is counted from then, which can only make it end sooner.
      found = { id: t.to_session, address: t.to_address, history, renewed_at: when };
      at = found;
      this.d.log(`the spool names ${t.to_session} as the successor of ${t.from_session} (spooled before a stop); reading it`);
    }
    return found;
  }

  /** An unpinned session lapsed (or vanished) under us: register a new one and spool the address change. */
  async replace(reason: string): Promise<Established> {
    return this.register(this.record, reason);
  }

  /**
   * The Hub reported a renewal (drain, stream open, ack with session). Written whole but not
   * fsynced into the directory (two acks per message renew it): a power cut may leave the
   * previous renewal of the same session, never a torn record or another id — the epilogue
   * then says the lease ends sooner, never later (docs/consumer.md "What a renewal's write owes").
   */
  renewed(lease: SessionLease): void {
    if (this.record === null || lease.id !== this.record.id) return;
    this.record = { ...this.record, expires_at: lease.expires_at, lease_seconds: lease.lease_seconds, renewed_at: this.d.clock.now() };
    this.d.stateDir.write('session', this.record, 'whole');
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
    const prior = this.d.stateDir.read('session');
    const same = prior.state === 'ok' && prior.value.id === id ? prior.value : null;
    return { ok: true, session: this.adopt(s, same?.history ?? [], same?.renewed_at ?? null) };
  }

  /**
   * Keep the recorded renewal when adopting without renewing (GET does not renew); the first
   * drain or stream open renews and records it.
   */
  private adopt(s: Session, history: SessionHistoryItem[], renewedAt: number | null): SessionRecord {
    const record = this.write({
      id: s.id,
      address: s.address,
      name: s.name,
      pinned: this.d.pinned !== null,
      lease_seconds: s.lease_seconds,
      expires_at: s.expires_at,
      renewed_at: renewedAt ?? this.d.clock.now(),
      history,
    });
    this.d.log(`adopted session ${s.id} (${s.address}), expires ${s.expires_at} (Hub's clock)`);
    return record;
  }

  private async register(previous: Predecessor | null, reason: string): Promise<Established> {
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
    const history =
      previous === null
        ? []
        : previous.id === s.id
          ? previous.history
          : [...previous.history, { id: previous.id, address: previous.address, replaced_at: now, reason }];
    if (previous !== null && previous.id !== s.id) {
      // The transition goes into the spool before the record names the new session: a crash
      // in between leaves it spooled, never lost, and the next establish finds the new
      // session from it (spooledSuccessor) rather than registering and spooling another.
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
    return {
      ok: true,
      session: this.write({
        id: s.id,
        address: s.address,
        name: s.name,
        pinned: false,
        lease_seconds: s.lease_seconds,
        expires_at: s.expires_at,
        renewed_at: now,
        history,
      }),
    };
  }

  /**
   * session.json names the session, its history now holding every stood-down one; only then
   * does stood-down.json go, so a reader always finds a replaced session in one or the other.
   */
  private write(record: SessionRecord): SessionRecord {
    const known = new Set([record.id, ...record.history.map((h) => h.id)]);
    const written = { ...record, history: [...record.history, ...this.stood.filter((s) => !known.has(s.id)).map(asHistory)] };
    this.record = written;
    this.d.stateDir.write('session', written);
    if (this.stood.length > 0) {
      clearStoodDown(this.d.stateDir);
      this.stood = [];
    }
    return written;
  }
}
