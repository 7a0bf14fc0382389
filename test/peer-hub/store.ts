import { signature, type Json } from './canonical.js';
import { IdMint, freshToken } from './ids.js';
import type { PeerKnobs } from './knobs.js';
import { withExtras } from './wire.js';

/**
 * The peer Hub's in-memory state and every rule of MA2H §3–§10 and §12 that acts on it,
 * written from MA2H.md alone. Nothing here does I/O except through `HeldStream`.
 */

/** A refusal is a value: the route turns it into the §0 error body. */
export class Refusal {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly message: string,
    readonly details: { [key: string]: Json } = {},
  ) {}
}

type SessionState = 'active' | 'lapsed' | 'closed' | 'closed_by_operator';
type EndState = Exclude<SessionState, 'active'>;
type MessageState = 'queued' | 'delivered' | 'acknowledged' | 'bounced' | 'expired';
export type Intent = 'notify' | 'ask' | 'task';
type Obj = { [key: string]: Json };

/** The parsed `MA2H-Consumer` header. */
export interface Consumer {
  home: string;
  host: string;
  pid: number;
}

interface Holder extends Consumer {
  since: number;
  lastSeenAt: number;
}

/** What the store needs from an open SSE stream. */
export interface HeldStream {
  readonly consumer: Consumer | null;
  push(deliveries: Json[]): void;
  /** `event: closed {"reason"}`, then the end of the response. */
  close(reason: string): void;
}

export interface AgentRec {
  id: string;
  label: string;
  revoked: boolean;
  source: 'account' | 'config';
  principalSeenAt: number | null;
}

export interface SessionRec {
  id: string;
  agentId: string;
  clientKey: string;
  name: string | null;
  state: SessionState;
  leaseSeconds: number;
  expiresAt: number;
  lastRenewedAt: number;
  createdAt: number;
  closedAt: number | null;
  holder: Holder | null;
  /** Open SSE responses on this session (a connect without MA2H-Consumer does not displace the holder's). */
  streams: Set<HeldStream>;
  /** Last drain or connect (presence, §10). */
  seenAt: number | null;
}

export interface EntryRec {
  entry: { [key: string]: string };
  /** The mailbox: the agent, and the session for a session address (null: principal). */
  agentId: string;
  sessionId: string | null;
  claimedBy: string | null;
  delivered: boolean;
  acknowledged: boolean;
  /** Bounced or expired: never offered again. */
  dead: boolean;
  messageId: string | null;
  createdAt: number;
  /** How many deliveries were signed for it (each afresh), and the last signature sent. */
  signed: number;
  lastSignature: string | null;
}

export interface MessageRec {
  id: string;
  from: string;
  to: string;
  intent: Intent | 'directive' | 'response';
  text: string;
  createdAt: number;
  state: MessageState;
  prior: 'queued' | 'delivered' | null;
  track: { state: MessageState; at: number }[];
  destination: { address: string; snapshot: 'online' | 'offline' | 'unknown' };
  response: { messageId: string; text: string; at: number } | null;
  /** null: a human sent it (a directive gets no receipts). */
  senderAgentId: string | null;
  /** The sender's session when it attached one: where responses and receipts go. */
  replySessionId: string | null;
  recipientAgentId: string;
  entryId: string | null;
  inReplyTo: string | null;
  idempotency: { key: string; body: string } | null;
}

/** One operator close: it refuses re-registering by its client_key and by its name (§9). */
interface OperatorStop {
  agentId: string;
  clientKey: string;
  name: string | null;
}

type Token = { kind: 'agent'; agentId: string } | { kind: 'human' };

const NAME = /^[A-Za-z0-9._:-]{1,64}$/;
const utf8Bytes = (s: string): number => Buffer.byteLength(s, 'utf8');

export const iso = (ms: number): string => new Date(ms).toISOString();
const principalAddress = (agentId: string): string => `agent:${agentId}`;
const sessionAddress = (s: SessionRec): string => `agent:${s.agentId}#${s.id}`;

/** `agent:<id>` or `agent:<id>#<session>`; agent ids never hold `#` (§0). */
function parseAddress(a: string): { agentId: string; sessionId: string | null } | null {
  if (!a.startsWith('agent:')) return null;
  const rest = a.slice('agent:'.length);
  const hash = rest.indexOf('#');
  const agentId = hash < 0 ? rest : rest.slice(0, hash);
  const sessionId = hash < 0 ? null : rest.slice(hash + 1);
  if (agentId === '' || sessionId === '') return null;
  return { agentId, sessionId };
}

const endReason: Record<EndState, string> = {
  lapsed: 'session_lapsed',
  closed: 'session_closed',
  closed_by_operator: 'session_closed_by_operator',
};

/** Presenting a session that is not active (§0 table, §3). */
function notActive(s: SessionRec, forAck = false): Refusal {
  const state = s.state as EndState;
  const status = state === 'closed_by_operator' && !forAck ? 403 : 410;
  return new Refusal(status, endReason[state], `session ${s.id} is ${state}`, { state });
}

export class PeerStore {
  readonly accountId: string;
  readonly accountLabel = 'peer hub account';
  agentMessaging = true;
  readonly agents = new Map<string, AgentRec>();
  readonly tokens = new Map<string, Token>();
  readonly sessions = new Map<string, SessionRec>();
  readonly entries: EntryRec[] = [];
  private readonly entryById = new Map<string, EntryRec>();
  readonly messages = new Map<string, MessageRec>();
  private readonly stops: OperatorStop[] = [];
  private readonly listeners = new Set<() => void>();
  private readonly cursors = new Map<string, number>();
  readonly mint: IdMint;

  constructor(readonly knobs: PeerKnobs) {
    this.mint = new IdMint(() => knobs.ids);
    this.accountId = this.mint.next('account');
  }

  now(): number {
    return Date.now() + this.knobs.clockSkewMs;
  }

  // ---- change notification (long-polls wait on it) ----

  onChange(fn: () => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  private changed(): void {
    for (const fn of [...this.listeners]) fn();
  }

  // ---- identities ----

  addAgent(opts: { label?: string; id?: string; source?: 'account' | 'config' } = {}): { agent: AgentRec; token: string } {
    const agent: AgentRec = {
      id: opts.id ?? this.mint.next('agent'),
      label: opts.label ?? 'peer-agent',
      revoked: false,
      source: opts.source ?? 'account',
      principalSeenAt: null,
    };
    this.agents.set(agent.id, agent);
    const token = freshToken();
    this.tokens.set(token, { kind: 'agent', agentId: agent.id });
    return { agent, token };
  }

  /** The agent behind a token, or null when it is unknown or revoked (401). */
  authenticate(token: string): { kind: 'agent'; agent: AgentRec } | { kind: 'human' } | null {
    const t = this.tokens.get(token);
    if (t === undefined) return null;
    if (t.kind === 'human') return t;
    const agent = this.agents.get(t.agentId);
    return agent === undefined || agent.revoked ? null : { kind: 'agent', agent };
  }

  // ---- time passes ----

  /** Lapse sessions whose lease ran out and expire mail past the TTL (run before every request and on a timer). */
  sweep(): void {
    const t = this.now();
    for (const s of this.sessions.values()) if (s.state === 'active' && t >= s.expiresAt) this.end(s, 'lapsed');
    const ttl = this.knobs.messageTtlSeconds * 1000;
    for (const e of this.entries) {
      if (e.acknowledged || e.dead || e.messageId === null || t - e.createdAt < ttl) continue;
      e.dead = true;
      const m = this.messages.get(e.messageId);
      if (m !== undefined && !terminal(m.state)) this.finish(m, 'expired', 'message_ttl');
    }
  }

  // ---- sessions (§3) ----

  private leaseFor(requested: number | null): number {
    const k = this.knobs;
    return Math.min(k.leaseMaxSeconds, Math.max(k.leaseMinSeconds, requested ?? k.leaseDefaultSeconds));
  }

  private renew(s: SessionRec): void {
    const t = this.now();
    s.expiresAt = t + s.leaseSeconds * 1000;
    s.lastRenewedAt = t;
  }

  /** Holder "seen" (§12): an open stream of its home, or a drain/connect within the window. */
  private holderSeen(s: SessionRec): boolean {
    const h = s.holder;
    if (h === null) return false;
    if ([...s.streams].some((x) => x.consumer?.home === h.home)) return true;
    return this.now() - h.lastSeenAt < this.knobs.holderSeenSeconds * 1000;
  }

  holderView(h: Holder): Obj {
    return { home: h.home, host: h.host, pid: h.pid, since: iso(h.since), last_seen_at: iso(h.lastSeenAt) };
  }

  private stopped(agentId: string, clientKey: string, name: string | null): boolean {
    return this.stops.some((st) => st.agentId === agentId && (st.clientKey === clientKey || (st.name !== null && st.name === name)));
  }

  register(
    agent: AgentRec,
    body: { clientKey: string; name: string | null; leaseSeconds: number | null; home: string | null; host: string | null; pid: number | null },
  ): { status: 200 | 201; session: SessionRec } | Refusal {
    if (!this.agentMessaging) return messagingDisabled();
    if (utf8Bytes(body.clientKey) > 128 || body.clientKey === '') return new Refusal(400, 'invalid_request', 'client_key must be 1–128 bytes');
    if (body.name !== null && !NAME.test(body.name)) return new Refusal(400, 'invalid_request', 'name must match [A-Za-z0-9._:-]{1,64}');
    if (this.stopped(agent.id, body.clientKey, body.name)) {
      return new Refusal(403, 'session_closed_by_operator', 'a human closed this session; re-registering is refused until the stop is lifted', {
        state: 'closed_by_operator',
      });
    }
    const t = this.now();
    const holderOf = (): Holder | null =>
      body.home === null ? null : { home: body.home, host: body.host ?? 'unknown', pid: body.pid ?? 0, since: t, lastSeenAt: t };
    if (body.name !== null) {
      const live = [...this.sessions.values()].find((s) => s.agentId === agent.id && s.state === 'active' && s.name === body.name);
      if (live !== undefined) {
        const sameHome = body.home !== null && live.holder?.home === body.home;
        if (!sameHome && this.holderSeen(live)) {
          return new Refusal(409, 'session_held', `session ${live.id} (name ${body.name}) is held by another home`, { holder: this.holderView(live.holder!) });
        }
        if (body.leaseSeconds !== null) live.leaseSeconds = this.leaseFor(body.leaseSeconds);
        if (sameHome) {
          live.holder = { ...live.holder!, host: body.host ?? live.holder!.host, pid: body.pid ?? live.holder!.pid, lastSeenAt: t };
        } else {
          live.holder = holderOf();
        }
        this.renew(live);
        return { status: 200, session: live };
      }
    }
    const live = [...this.sessions.values()].filter((s) => s.agentId === agent.id && s.state === 'active').length;
    if (live >= this.knobs.maxLivePerAgent) {
      return new Refusal(409, 'too_many_sessions', `agent ${agent.id} already has ${live} live sessions (at most ${this.knobs.maxLivePerAgent})`, {
        limit: this.knobs.maxLivePerAgent,
      });
    }
    const s: SessionRec = {
      id: this.mint.next('session', this.knobs.sessionIdPrefix),
      agentId: agent.id,
      clientKey: body.clientKey,
      name: body.name,
      state: 'active',
      leaseSeconds: this.leaseFor(body.leaseSeconds),
      expiresAt: 0,
      lastRenewedAt: t,
      createdAt: t,
      closedAt: null,
      holder: holderOf(),
      streams: new Set(),
      seenAt: null,
    };
    this.renew(s);
    this.sessions.set(s.id, s);
    return { status: 201, session: s };
  }

  /** A session of this agent, whatever its state (`GET /v1/sessions/:id`, close). */
  lookup(agent: AgentRec, id: string): SessionRec | Refusal {
    const s = this.sessions.get(id);
    if (s === undefined || s.agentId !== agent.id) return new Refusal(404, 'session_not_found', `no session ${id} for this agent`);
    return s;
  }

  /**
   * Present (and so renew) a session. A drain or connect is also presence, and with a
   * consumer it enforces one consumer per session (§4): another home seen within the
   * window is 409; the holder's own home with another pid replaces it (its open stream is
   * told `replaced`, §12). Acks and sends only renew.
   */
  present(agent: AgentRec, id: string, how: { drain: boolean; consumer: Consumer | null; forAck?: boolean }): SessionRec | Refusal {
    const s = this.lookup(agent, id);
    if (s instanceof Refusal) return s;
    if (s.state !== 'active') return notActive(s, how.forAck === true);
    const t = this.now();
    const c = how.consumer;
    if (how.drain && c !== null) {
      const h = s.holder;
      if (h !== null && h.home !== c.home && this.holderSeen(s)) {
        return new Refusal(409, 'session_held', `another home's consumer holds session ${s.id}`, { holder: this.holderView(h) });
      }
      if (h !== null && h.home === c.home && h.pid === c.pid) {
        h.host = c.host;
        h.lastSeenAt = t;
      } else {
        for (const x of [...s.streams]) if (x.consumer?.home === c.home) this.closeStream(s, x, 'replaced');
        s.holder = { ...c, since: t, lastSeenAt: t };
      }
    }
    if (how.drain) s.seenAt = t;
    this.renew(s);
    return s;
  }

  /** Attach a stream to a presented session; an older stream of the very same consumer is told it was replaced. */
  attach(s: SessionRec, stream: HeldStream): void {
    const c = stream.consumer;
    if (c !== null) for (const x of [...s.streams]) if (x.consumer?.home === c.home && x.consumer.pid === c.pid) this.closeStream(s, x, 'replaced');
    s.streams.add(stream);
    s.seenAt = this.now();
  }

  detach(s: SessionRec, stream: HeldStream): void {
    if (!s.streams.delete(stream)) return;
    const t = this.now();
    s.seenAt = t;
    if (s.holder !== null && stream.consumer?.home === s.holder.home) s.holder.lastSeenAt = t;
  }

  private closeStream(s: SessionRec, stream: HeldStream, reason: string): void {
    s.streams.delete(stream);
    stream.close(reason);
  }

  close(s: SessionRec, state: 'closed' | 'closed_by_operator'): void {
    if (state === 'closed_by_operator') this.stops.push({ agentId: s.agentId, clientKey: s.clientKey, name: s.name });
    if (s.state === 'active') this.end(s, state);
  }

  /** Lift the stops that match: by client_key, by name, or all of the agent's when neither is named. */
  lift(agentId: string, clientKey: string | null, name: string | null): number {
    const before = this.stops.length;
    const lifted = (st: OperatorStop): boolean =>
      st.agentId === agentId && ((clientKey === null && name === null) || st.clientKey === clientKey || (name !== null && st.name === name));
    this.stops.splice(0, this.stops.length, ...this.stops.filter((st) => !lifted(st)));
    return before - this.stops.length;
  }

  /** For tests: let the lease run out now, as if the Hub's clock passed `expires_at`. */
  lapseNow(id: string): void {
    const s = this.sessions.get(id);
    if (s !== undefined && s.state === 'active') this.end(s, 'lapsed');
  }

  /** A session stops: its queued mail bounces, its claimed principal mail is released, its stream is told. */
  private end(s: SessionRec, state: EndState): void {
    const t = this.now();
    s.state = state;
    s.closedAt = state === 'lapsed' ? s.expiresAt : t;
    const released: EntryRec[] = [];
    for (const e of this.entries) {
      if (e.acknowledged || e.dead) continue;
      if (e.sessionId === s.id) {
        e.dead = true;
        const m = e.messageId === null ? undefined : this.messages.get(e.messageId);
        if (m !== undefined && !terminal(m.state)) this.finish(m, 'bounced', endReason[state]);
      } else if (e.claimedBy === s.id) {
        e.claimedBy = null;
        released.push(e);
      }
    }
    for (const x of [...s.streams]) this.closeStream(s, x, state);
    for (const e of released) this.offer(e);
    this.changed();
  }

  // ---- mailboxes (§4–§6) ----

  delivery(e: EntryRec): Json {
    e.signed += 1;
    const t = this.now() / 1000 - this.knobs.signatureAgeSeconds;
    const entry = this.knobs.reshapeEntry?.({ ...e.entry }) ?? e.entry;
    const signed = signature(this.knobs.signingKey, t, entry);
    const sent = this.knobs.tamperSignature?.(signed, e.lastSignature) ?? signed;
    e.lastSignature = sent;
    return withExtras({ entry, signature: sent }, this.knobs.json, 'delivery');
  }

  /** Everything a session may be handed now, claiming the principal entries it takes (first-claim-wins). */
  pendingFor(s: SessionRec, limit = Infinity): EntryRec[] {
    const out: EntryRec[] = [];
    for (const e of this.entries) {
      if (out.length >= limit) break;
      if (e.acknowledged || e.dead || e.agentId !== s.agentId) continue;
      if (e.sessionId === s.id || (e.sessionId === null && (e.claimedBy === null || e.claimedBy === s.id))) {
        if (e.sessionId === null) e.claimedBy = s.id;
        out.push(e);
      }
    }
    return out;
  }

  /** The principal drain: unacknowledged principal mail no session has claimed. */
  principalPending(agent: AgentRec, limit = Infinity): EntryRec[] {
    return this.entries.filter((e) => e.agentId === agent.id && e.sessionId === null && e.claimedBy === null && !e.acknowledged && !e.dead).slice(0, limit);
  }

  touchPrincipal(agent: AgentRec): void {
    agent.principalSeenAt = this.now();
  }

  /** `POST /v1/inbox/ack`: any entry addressed to this agent, under any session (§12). */
  ack(agent: AgentRec, delivered: string[], acknowledged: string[]): { delivered: number; acknowledged: number; unknown: string[] } {
    const unknown = new Set<string>();
    const known = (id: string): EntryRec | null => {
      const e = this.entryById.get(id);
      if (e === undefined || e.agentId !== agent.id) {
        unknown.add(id);
        return null;
      }
      return e;
    };
    let d = 0;
    let a = 0;
    for (const id of delivered) {
      const e = known(id);
      if (e === null) continue;
      d++;
      this.markDelivered(e);
    }
    for (const id of acknowledged) {
      const e = known(id);
      if (e === null) continue;
      a++;
      this.markDelivered(e);
      if (e.acknowledged) continue;
      e.acknowledged = true;
      const m = e.messageId === null ? undefined : this.messages.get(e.messageId);
      if (m !== undefined && !e.dead && !terminal(m.state)) this.finish(m, 'acknowledged', null);
    }
    this.changed();
    return { delivered: d, acknowledged: a, unknown: [...unknown] };
  }

  private markDelivered(e: EntryRec): void {
    e.delivered = true;
    const m = e.messageId === null ? undefined : this.messages.get(e.messageId);
    if (m !== undefined && m.state === 'queued' && !e.dead) this.step(m, 'delivered');
  }

  private step(m: MessageRec, state: MessageState): void {
    m.state = state;
    m.track.push({ state, at: this.now() });
  }

  /** A terminal state, and the receipt it sends the sender (§8, §12). */
  private finish(m: MessageRec, status: 'acknowledged' | 'bounced' | 'expired', reason: string | null): void {
    if (status === 'acknowledged') {
      if (m.state === 'queued') this.step(m, 'delivered');
      m.prior = null;
    } else {
      m.prior = m.state === 'delivered' ? 'delivered' : 'queued';
    }
    this.step(m, status);
    if (m.senderAgentId === null) return;
    const receipt: { [key: string]: string } = {
      id: this.mint.next('entry'),
      kind: 'receipt',
      from: m.to,
      to: this.replyAddress(m),
      created_at: iso(this.now()),
      message_id: m.id,
      status,
    };
    if (m.prior !== null) receipt.prior = m.prior;
    if (reason !== null) receipt.reason = reason;
    this.enqueue(receipt, null);
  }

  /** Where responses and receipts for a message go: its sender session while active, else the principal mailbox. */
  private replyAddress(m: MessageRec): string {
    const s = m.replySessionId === null ? undefined : this.sessions.get(m.replySessionId);
    return s !== undefined && s.state === 'active' ? sessionAddress(s) : principalAddress(m.senderAgentId!);
  }

  private enqueue(entry: { [key: string]: string }, messageId: string | null): EntryRec {
    const to = parseAddress(entry.to!)!;
    const e: EntryRec = {
      entry,
      agentId: to.agentId,
      sessionId: to.sessionId,
      claimedBy: null,
      delivered: false,
      acknowledged: false,
      dead: false,
      messageId,
      createdAt: this.now(),
      signed: 0,
      lastSignature: null,
    };
    this.entries.push(e);
    this.entryById.set(entry.id!, e);
    this.offer(e);
    this.changed();
    return e;
  }

  /** Push a new or released entry to a stream that may take it. */
  private offer(e: EntryRec): void {
    if (e.sessionId !== null) {
      const s = this.sessions.get(e.sessionId);
      for (const x of s?.streams ?? []) x.push([this.delivery(e)]);
      return;
    }
    const taker = [...this.sessions.values()].find((s) => s.agentId === e.agentId && s.state === 'active' && s.streams.size > 0);
    if (taker === undefined) return;
    e.claimedBy = taker.id;
    for (const x of taker.streams) x.push([this.delivery(e)]);
  }

  entry(id: string): EntryRec | undefined {
    return this.entryById.get(id);
  }

  // ---- presence (§10, §12) ----

  private sessionOnline(s: SessionRec): boolean {
    return s.streams.size > 0 || (s.seenAt !== null && this.now() - s.seenAt <= this.knobs.presenceSeconds * 1000);
  }

  reachability(address: string): 'online' | 'offline' | 'unknown' {
    const a = parseAddress(address);
    if (a === null) return 'unknown';
    if (a.sessionId !== null) {
      const s = this.sessions.get(a.sessionId);
      if (s === undefined || (s.seenAt === null && s.streams.size === 0)) return 'unknown';
      return this.sessionOnline(s) ? 'online' : 'offline';
    }
    const agent = this.agents.get(a.agentId);
    if (agent === undefined) return 'unknown';
    const own = [...this.sessions.values()].filter((s) => s.agentId === agent.id);
    if (own.some((s) => s.state === 'active' && this.sessionOnline(s))) return 'online';
    if (agent.principalSeenAt !== null && this.now() - agent.principalSeenAt <= this.knobs.presenceSeconds * 1000) return 'online';
    return agent.principalSeenAt === null && own.every((s) => s.seenAt === null) ? 'unknown' : 'offline';
  }

  // ---- sending (§8, §9) ----

  /** The recipient of an address, refusing what §8 refuses. */
  private recipient(to: string): { agent: AgentRec; session: SessionRec | null } | Refusal {
    const a = parseAddress(to);
    if (a === null) return new Refusal(400, 'invalid_request', `"to" must be agent:<id> or agent:<id>#<session>, got ${JSON.stringify(to)}`);
    const agent = this.agents.get(a.agentId);
    if (agent === undefined || agent.revoked) return new Refusal(404, 'recipient_not_found', `no agent ${a.agentId}`);
    if (a.sessionId === null) return { agent, session: null };
    const s = this.sessions.get(a.sessionId);
    if (s === undefined || s.agentId !== agent.id) return new Refusal(404, 'recipient_not_found', `no session ${a.sessionId} for agent ${agent.id}`);
    if (s.state !== 'active') return new Refusal(410, endReason[s.state], `session ${s.id} is ${s.state}`, { state: s.state });
    return { agent, session: s };
  }

  private newMessage(m: Omit<MessageRec, 'id' | 'createdAt' | 'state' | 'prior' | 'track' | 'destination' | 'response' | 'entryId'>): MessageRec {
    const t = this.now();
    const rec: MessageRec = {
      ...m,
      id: this.mint.next('message'),
      createdAt: t,
      state: 'queued',
      prior: null,
      track: [{ state: 'queued', at: t }],
      destination: { address: m.to, snapshot: this.reachability(m.to) },
      response: null,
      entryId: null,
    };
    this.messages.set(rec.id, rec);
    return rec;
  }

  idempotent(agent: AgentRec, key: string, body: string): { message: MessageRec } | Refusal | null {
    for (const m of this.messages.values()) {
      if (m.senderAgentId !== agent.id || m.idempotency?.key !== key) continue;
      if (m.idempotency.body !== body) return new Refusal(409, 'idempotency_conflict', `idempotency_key ${JSON.stringify(key)} was used with a different body`);
      return { message: m };
    }
    return null;
  }

  send(
    agent: AgentRec,
    from: SessionRec | null,
    body: { to: string; intent: Intent; text: string; inReplyTo: string | null; idempotency: { key: string; body: string } | null },
  ): MessageRec | Refusal {
    if (!this.agentMessaging) return messagingDisabled();
    const r = this.recipient(body.to);
    if (r instanceof Refusal) return r;
    const m = this.newMessage({
      from: from === null ? principalAddress(agent.id) : sessionAddress(from),
      to: body.to,
      intent: body.intent,
      text: body.text,
      senderAgentId: agent.id,
      replySessionId: from?.id ?? null,
      recipientAgentId: r.agent.id,
      inReplyTo: body.inReplyTo,
      idempotency: body.idempotency,
    });
    const entry: { [key: string]: string } = {
      id: this.mint.next('entry'),
      kind: 'message',
      from: m.from,
      to: m.to,
      created_at: iso(m.createdAt),
      message_id: m.id,
      intent: body.intent,
      text: body.text,
    };
    if (body.inReplyTo !== null) {
      entry.in_reply_to = body.inReplyTo;
      entry.thread_id = body.inReplyTo;
    }
    m.entryId = this.enqueue(entry, m.id).entry.id!;
    return m;
  }

  respond(agent: AgentRec, from: SessionRec | null, askId: string, text: string): MessageRec | Refusal {
    if (!this.agentMessaging) return messagingDisabled();
    const ask = this.messages.get(askId);
    if (ask === undefined || (ask.recipientAgentId !== agent.id && ask.senderAgentId !== agent.id)) {
      return new Refusal(404, 'message_not_found', `no message ${askId} for this agent`);
    }
    if (ask.recipientAgentId !== agent.id || (ask.intent !== 'ask' && ask.intent !== 'task')) {
      return new Refusal(409, 'not_respondable', `message ${askId} is a ${ask.intent} this agent received no question in`);
    }
    if (ask.response !== null) return new Refusal(409, 'already_responded', `message ${askId} already has a response`);
    const resp = this.newMessage({
      from: from === null ? principalAddress(agent.id) : sessionAddress(from),
      to: ask.from,
      intent: 'response',
      text,
      senderAgentId: agent.id,
      replySessionId: from?.id ?? null,
      recipientAgentId: ask.senderAgentId!,
      inReplyTo: ask.id,
      idempotency: null,
    });
    ask.response = { messageId: resp.id, text, at: resp.createdAt };
    const asker = ask.replySessionId === null ? undefined : this.sessions.get(ask.replySessionId);
    if (asker !== undefined && asker.state !== 'active') {
      // §12: a response to an asker whose session has ended bounces at once.
      this.finish(resp, 'bounced', endReason[asker.state as EndState]);
    } else {
      const entry = {
        id: this.mint.next('entry'),
        kind: 'response',
        from: resp.from,
        to: resp.to,
        created_at: iso(resp.createdAt),
        message_id: resp.id,
        in_reply_to: ask.id,
        text,
        thread_id: ask.id,
      };
      resp.entryId = this.enqueue(entry, resp.id).entry.id!;
    }
    this.changed();
    return resp;
  }

  directive(to: string, text: string): MessageRec | Refusal {
    const r = this.recipient(to);
    if (r instanceof Refusal) return r;
    const m = this.newMessage({
      from: `human:${this.accountId}`,
      to,
      intent: 'directive',
      text,
      senderAgentId: null,
      replySessionId: null,
      recipientAgentId: r.agent.id,
      inReplyTo: null,
      idempotency: null,
    });
    const entry = { id: this.mint.next('entry'), kind: 'directive', from: m.from, to, created_at: iso(m.createdAt), text };
    m.entryId = this.enqueue(entry, m.id).entry.id!;
    return m;
  }

  visibleMessage(agent: AgentRec, id: string): MessageRec | Refusal {
    const m = this.messages.get(id);
    if (m === undefined || (m.senderAgentId !== agent.id && m.recipientAgentId !== agent.id))
      return new Refusal(404, 'message_not_found', `no message ${id} for this agent`);
    return m;
  }

  /** Newest first, with an opaque cursor (§12). */
  listMessages(
    agent: AgentRec,
    direction: 'sent' | 'received',
    limit: number,
    before: string | null,
  ): { messages: MessageRec[]; next: string | null } | Refusal {
    const all = [...this.messages.values()].filter((m) => (direction === 'sent' ? m.senderAgentId === agent.id : m.recipientAgentId === agent.id)).reverse();
    let start = 0;
    if (before !== null) {
      const at = this.cursors.get(before);
      if (at === undefined) return new Refusal(400, 'invalid_request', `unknown cursor ${JSON.stringify(before)}`);
      start = all.findIndex((m) => this.seqOf(m) < at);
      if (start < 0) start = all.length;
    }
    const page = all.slice(start, start + limit);
    let next: string | null = null;
    if (start + limit < all.length && page.length > 0) {
      next = this.mint.next('cursor');
      this.cursors.set(next, this.seqOf(page[page.length - 1]!));
    }
    return { messages: page, next };
  }

  private seqOf(m: MessageRec): number {
    return [...this.messages.keys()].indexOf(m.id);
  }

  // ---- views ----

  sessionView(s: SessionRec): Obj {
    return withExtras(
      {
        id: s.id,
        agent_id: s.agentId,
        address: sessionAddress(s),
        name: s.name,
        state: s.state,
        lease_seconds: s.leaseSeconds,
        expires_at: iso(s.expiresAt),
        last_renewed_at: iso(s.lastRenewedAt),
        created_at: iso(s.createdAt),
        closed_at: s.closedAt === null ? null : iso(s.closedAt),
        holder: s.holder === null ? null : this.holderView(s.holder),
      },
      this.knobs.json,
      'session',
    );
  }

  leaseView(s: SessionRec): Obj {
    return withExtras({ id: s.id, expires_at: iso(s.expiresAt), lease_seconds: s.leaseSeconds }, this.knobs.json, 'lease');
  }

  messageView(m: MessageRec): Obj {
    const v: Obj = {
      id: m.id,
      from: m.from,
      to: m.to,
      intent: m.intent,
      text: m.text,
      created_at: iso(m.createdAt),
      state: m.state,
      track: m.track.map((x) => ({ state: x.state, at: iso(x.at) })),
      destination: { address: m.destination.address, snapshot: m.destination.snapshot },
    };
    if (m.prior !== null) v.prior = m.prior;
    if (m.response !== null) v.response = { message_id: m.response.messageId, text: m.response.text, at: iso(m.response.at) };
    return withExtras(v, this.knobs.json, 'message');
  }

  fleet(): Obj[] {
    return [...this.sessions.values()]
      .filter((s) => s.state === 'active')
      .map((s) =>
        withExtras(
          {
            address: sessionAddress(s),
            agent_id: s.agentId,
            agent_label: this.agents.get(s.agentId)?.label ?? '',
            session_id: s.id,
            name: s.name,
            state: s.state,
            reachability: this.reachability(sessionAddress(s)),
            expires_at: iso(s.expiresAt),
            last_renewed_at: iso(s.lastRenewedAt),
            holder: s.holder === null ? null : { host: s.holder.host, pid: s.holder.pid },
          },
          this.knobs.json,
          'fleet_row',
        ),
      );
  }
}

const terminal = (s: MessageState): boolean => s === 'acknowledged' || s === 'bounced' || s === 'expired';

export const messagingDisabled = (): Refusal =>
  new Refusal(403, 'messaging_disabled', 'agent messaging is switched off for this account (Settings → Agent messaging)', { setting: 'agent_messaging' });
