import { Agent } from './undici.js';
import {
  checkCapability,
  CONSUMER_HEADER,
  formatConsumerHeader,
  parseAccountState,
  parseAckResult,
  parseAgents,
  parseDrain,
  parseFleet,
  parseLiftResult,
  parseMessage,
  parseMessageList,
  parseMintedAgent,
  parseOperatorStops,
  parseSentMessage,
  parseSession,
  parseWhoami,
  type AccountPatch,
  type AccountState,
  type AckRequest,
  type AckResult,
  type AgentRow,
  type Capability,
  type ConsumerIdentity,
  type CreateSessionRequest,
  type DirectiveRequest,
  type DrainResult,
  type FleetRow,
  type LiftRequest,
  type LiftResult,
  type Message,
  type MessageList,
  type MintAgentRequest,
  type MintedAgent,
  type OperatorStop,
  type RespondRequest,
  type SendRequest,
  type SentMessage,
  type Session,
  type Whoami,
} from '../contract/index.js';
import { ok, type Result } from '../../core/index.js';
import { call, type CallSpec, type Transport } from './http.js';
import type { HubResult } from './result.js';
import { openStream, type StreamEnd, type StreamOptions } from './stream.js';
import { StreamConnections } from './stream-connections.js';

export interface HubClientOptions {
  /** The Hub's origin, e.g. `https://hub.example.com` (config's parseHubUrl gives exactly this). */
  baseUrl: string;
  token?: string | null;
  /** Sent as `MA2H-Consumer` on drains and stream connects: this process holds the session. */
  consumer?: ConsumerIdentity | null;
  userAgent?: string;
  /** Timeout for an ordinary request's headers and for silence inside its body. */
  requestTimeoutMs?: number;
}

export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;
export const DEFAULT_AGENT_DIRECTORY = '/v1/account/agents';

const seg = encodeURIComponent;

function query(params: Record<string, string | number | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined) q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : '';
}

/** A body MA2H does not specify: any JSON answer is accepted and nothing is read from it. */
const ignoreBody = (): Result<null> => ok(null);

/**
 * One Hub, one credential. Every MA2H endpoint is a method returning a HubResult; the
 * bearer travels only in the Authorization header. `close()` releases the sockets.
 */
export class HubClient {
  private readonly t: Transport;
  private readonly consumer: ConsumerIdentity | null;
  /** Formatted once, so a bad pid fails at construction rather than mid-drain. */
  private readonly consumerHeader: Record<string, string>;
  private readonly agent: Agent;
  private readonly streams: StreamConnections;

  constructor(opts: HubClientOptions) {
    const url = new URL(opts.baseUrl);
    if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.username || url.password) {
      throw new RangeError(`HubClient needs an http(s) origin without credentials, got ${url.protocol}//${url.host}`);
    }
    this.agent = new Agent();
    this.streams = new StreamConnections(url.origin);
    this.consumer = opts.consumer ?? null;
    this.consumerHeader = this.consumer ? { [CONSUMER_HEADER.toLowerCase()]: formatConsumerHeader(this.consumer) } : {};
    this.t = {
      origin: url.origin,
      dispatcher: this.agent,
      token: opts.token ?? null,
      userAgent: opts.userAgent ?? 'oh-hai',
      requestTimeoutMs: opts.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
    };
  }

  get origin(): string {
    return this.t.origin;
  }

  async close(): Promise<void> {
    await Promise.all([this.agent.close(), this.streams.close()]);
  }

  private call<T>(spec: Omit<CallSpec<T>, 'auth'> & { auth?: boolean }): Promise<HubResult<T>> {
    return call(this.t, { auth: true, ...spec });
  }

  /** §1 — no credential is sent. */
  capability(signal?: AbortSignal): Promise<HubResult<Capability>> {
    return this.call({ method: 'GET', path: '/v1/capability', auth: false, signal, parse: checkCapability });
  }

  whoami(signal?: AbortSignal): Promise<HubResult<Whoami>> {
    return this.call({ method: 'GET', path: '/v1/whoami', signal, parse: parseWhoami });
  }

  /** §3 — status 201 is a new session, 200 an adopted or taken-over one. */
  createSession(body: CreateSessionRequest, signal?: AbortSignal): Promise<HubResult<Session>> {
    return this.call({ method: 'POST', path: '/v1/sessions', body, signal, parse: parseSession });
  }

  /** Reads a session without renewing it: the authority on its state. */
  getSession(id: string, signal?: AbortSignal): Promise<HubResult<Session>> {
    return this.call({ method: 'GET', path: `/v1/sessions/${seg(id)}`, signal, parse: parseSession });
  }

  closeSession(id: string, signal?: AbortSignal): Promise<HubResult<Session>> {
    return this.call({ method: 'POST', path: `/v1/sessions/${seg(id)}/close`, body: {}, signal, parse: parseSession });
  }

  /**
   * §4 — with `session` the session drain (presents and renews it); without, the
   * principal drain. `wait` asks the Hub to hold (principal drain only, by MA2H's rule).
   */
  drain(opts: { session?: string | null; wait?: number; limit?: number; signal?: AbortSignal } = {}): Promise<HubResult<DrainResult>> {
    return this.call({
      method: 'GET',
      path: `/v1/inbox${query({ session: opts.session ?? undefined, wait: opts.wait, limit: opts.limit })}`,
      headers: this.consumerHeader,
      holdSeconds: opts.wait,
      signal: opts.signal,
      parse: parseDrain,
    });
  }

  ack(body: AckRequest, signal?: AbortSignal): Promise<HubResult<AckResult>> {
    return this.call({ method: 'POST', path: '/v1/inbox/ack', body, signal, parse: parseAckResult });
  }

  /** §8 — 202 queued, or 200 with `idempotent_replay` for a repeated idempotency key. */
  send(body: SendRequest, signal?: AbortSignal): Promise<HubResult<SentMessage>> {
    return this.call({ method: 'POST', path: '/v1/messages', body, signal, parse: parseSentMessage });
  }

  respond(messageId: string, body: RespondRequest, signal?: AbortSignal): Promise<HubResult<SentMessage>> {
    return this.call({ method: 'POST', path: `/v1/messages/${seg(messageId)}/respond`, body, signal, parse: parseSentMessage });
  }

  getMessage(id: string, opts: { wait?: number; signal?: AbortSignal } = {}): Promise<HubResult<Message>> {
    return this.call({
      method: 'GET',
      path: `/v1/messages/${seg(id)}${query({ wait: opts.wait })}`,
      holdSeconds: opts.wait,
      signal: opts.signal,
      parse: parseMessage,
    });
  }

  listMessages(opts: { direction?: 'sent' | 'received'; limit?: number; before?: string; signal?: AbortSignal } = {}): Promise<HubResult<MessageList>> {
    return this.call({
      method: 'GET',
      path: `/v1/messages${query({ direction: opts.direction, limit: opts.limit, before: opts.before })}`,
      signal: opts.signal,
      parse: parseMessageList,
    });
  }

  /** §9 (human token). */
  directive(body: DirectiveRequest, signal?: AbortSignal): Promise<HubResult<Message>> {
    return this.call({ method: 'POST', path: '/v1/directives', body, signal, parse: parseMessage });
  }

  operatorClose(sessionId: string, signal?: AbortSignal): Promise<HubResult<Session>> {
    return this.call({ method: 'POST', path: `/v1/sessions/${seg(sessionId)}/operator-close`, body: {}, signal, parse: parseSession });
  }

  liftStop(body: LiftRequest, signal?: AbortSignal): Promise<HubResult<LiftResult>> {
    return this.call({ method: 'POST', path: '/v1/operator-stops/lift', body, signal, parse: parseLiftResult });
  }

  /** The reference Hub's `GET /v1/account`: the account with its messaging switch (not in MA2H). */
  account(signal?: AbortSignal): Promise<HubResult<AccountState>> {
    return this.call({ method: 'GET', path: '/v1/account', signal, parse: parseAccountState });
  }

  /** The reference Hub's `GET /v1/operator-stops` (human token): every recorded stop (not in MA2H). */
  operatorStops(signal?: AbortSignal): Promise<HubResult<OperatorStop[]>> {
    return this.call({ method: 'GET', path: '/v1/operator-stops', signal, parse: parseOperatorStops });
  }

  patchAccount(body: AccountPatch, signal?: AbortSignal): Promise<HubResult<AccountState>> {
    return this.call({ method: 'PATCH', path: '/v1/account', body, signal, parse: parseAccountState });
  }

  mintAgent(body: MintAgentRequest, signal?: AbortSignal): Promise<HubResult<MintedAgent>> {
    return this.call({ method: 'POST', path: '/v1/account/agents', body, signal, parse: parseMintedAgent });
  }

  /** Any 2xx means revoked; MA2H specifies no body. */
  revokeAgent(agentId: string, signal?: AbortSignal): Promise<HubResult<null>> {
    return this.call({ method: 'POST', path: `/v1/account/agents/${seg(agentId)}/revoke`, body: {}, signal, parse: ignoreBody });
  }

  /**
   * §10 — `path` is the capability's `account.agent_directory` when the Hub advertises
   * one; it must be a path on this Hub (a full URL elsewhere is refused before sending).
   */
  listAgents(opts: { includeConfig?: boolean; path?: string; signal?: AbortSignal } = {}): Promise<HubResult<AgentRow[]>> {
    const dir = opts.path ?? DEFAULT_AGENT_DIRECTORY;
    const url = new URL(dir, this.t.origin);
    if (url.origin !== this.t.origin) {
      return Promise.resolve({
        ok: false,
        failure: { kind: 'protocol', message: `account.agent_directory ${JSON.stringify(dir)} is not on the Hub's origin ${this.t.origin}` },
      });
    }
    if (opts.includeConfig) url.searchParams.set('include', 'config');
    return this.call({ method: 'GET', path: `${url.pathname}${url.search}`, signal: opts.signal, parse: parseAgents });
  }

  fleet(signal?: AbortSignal): Promise<HubResult<FleetRow[]>> {
    return this.call({ method: 'GET', path: '/v1/fleet', signal, parse: parseFleet });
  }

  /** §5 — one stream connect (one hold). Resolves with how it ended; never throws for a Hub's doing. */
  openStream(sessionId: string, opts: Omit<StreamOptions, 'consumer'> = {}): Promise<StreamEnd> {
    return this.streams.run((dispatcher) => openStream({ ...this.t, dispatcher }, sessionId, { ...opts, consumer: this.consumer }));
  }
}
