/**
 * MA2H 0.5 wire shapes (see docs/protocol.md). Response types are what our parsers
 * return: optional wire fields are normalised to `null` so callers never juggle
 * `undefined` against `null`.
 */

// ---- entries (§7) ----

export type EntryKind = 'directive' | 'message' | 'response' | 'receipt';
export type MessageIntent = 'notify' | 'ask' | 'task';
export type ReceiptStatus = 'acknowledged' | 'bounced' | 'expired';
export type PriorState = 'queued' | 'delivered';

/** Fields every entry carries. `thread_id` is absent from the JSON when not set. */
export interface EntryCommon {
  id: string;
  from: string;
  to: string;
  created_at: string;
  thread_id?: string;
}

export interface DirectiveEntry extends EntryCommon {
  kind: 'directive';
  text: string;
}

export interface MessageEntry extends EntryCommon {
  kind: 'message';
  message_id: string;
  intent: MessageIntent;
  text: string;
  in_reply_to?: string;
}

export interface ResponseEntry extends EntryCommon {
  kind: 'response';
  /** The response's own message id. */
  message_id: string;
  /** The ask's message id. */
  in_reply_to: string;
  text: string;
}

export interface ReceiptEntry extends EntryCommon {
  kind: 'receipt';
  message_id: string;
  status: ReceiptStatus;
  /** Required when `status` is `bounced`. */
  prior?: PriorState;
  reason?: string;
}

export type Entry = DirectiveEntry | MessageEntry | ResponseEntry | ReceiptEntry;

/** One delivery of an entry: signed afresh every time (new `t`, new `jti`). */
export interface Delivery {
  entry: Entry;
  signature: string;
}

export interface ParsedSignature {
  t: number;
  jti: string;
  alg: string;
  v1: string;
}

// ---- capability (§1) ----

export interface Capability {
  protocol: 'MA2H';
  version: string;
  hub: { name: string | null; version: string | null } | null;
  server_time: string | null;
  inbound: {
    session_param: true;
    stream_url: string | null;
    max_wait_seconds: number | null;
    stream_max_hold_seconds: number | null;
    keepalive_seconds: number | null;
  };
  /** Defaults to `["hmac-sha256"]` when the Hub advertises none. */
  signature_algs: string[];
  replay_window_seconds: number | null;
  session: {
    lease_default_seconds: number | null;
    lease_min_seconds: number | null;
    lease_max_seconds: number | null;
    max_live_per_agent: number | null;
  } | null;
  account: { agent_directory: string | null } | null;
}

// ---- identity (§2) ----

export type Whoami =
  { kind: 'agent'; agent: { id: string; label: string | null; account_id: string } } | { kind: 'human'; account: { id: string; label: string | null } };

// ---- sessions (§3) ----

export type SessionState = 'active' | 'lapsed' | 'closed' | 'closed_by_operator';

export interface SessionHolder {
  home: string;
  host: string;
  pid: number;
  since: string | null;
  last_seen_at: string | null;
}

export interface Session {
  id: string;
  agent_id: string;
  address: string;
  name: string | null;
  state: SessionState;
  lease_seconds: number;
  expires_at: string;
  last_renewed_at: string;
  created_at: string;
  closed_at: string | null;
  holder: SessionHolder | null;
}

/** The renewed lease carried by every response that presents a session. */
export interface SessionLease {
  id: string;
  expires_at: string;
  lease_seconds: number;
}

// ---- inbound (§4–§6) ----

/** A drain answer. Deliveries stay `unknown`: the consumer verifies each one, in order. */
export interface DrainResult {
  session: SessionLease | null;
  messages: unknown[];
}

export interface AckResult {
  delivered: number;
  acknowledged: number;
  unknown: string[];
  session: SessionLease | null;
}

export interface OpenEvent {
  session: string;
  expires_at: string;
  lease_seconds: number;
  hold_ms: number;
  stream_max_hold_seconds: number | null;
}

export interface EntriesEvent {
  messages: unknown[];
}

export type ClosedReason = 'closed' | 'closed_by_operator' | 'lapsed' | 'replaced';

export interface ClosedEvent {
  reason: ClosedReason;
}

export interface ReconnectEvent {
  reason: string;
}

// ---- messages (§8) ----

export type MessageState = 'queued' | 'delivered' | 'acknowledged' | 'bounced' | 'expired';
export type Reachability = 'online' | 'offline' | 'unknown';

export interface Message {
  id: string;
  from: string;
  to: string;
  /** `directive` and `response` appear in message objects too (§12). */
  intent: MessageIntent | 'directive' | 'response';
  text: string;
  created_at: string;
  state: MessageState;
  prior: PriorState | null;
  track: { state: MessageState; at: string }[];
  destination: { address: string; snapshot: Reachability } | null;
  response: { message_id: string; text: string; at: string } | null;
  in_reply_to: string | null;
  /** True when a send was answered from its idempotency key. */
  idempotent_replay: boolean;
}

/** A send or respond answer: the message, plus the lease when it presented a session. */
export interface SentMessage {
  message: Message;
  session: SessionLease | null;
}

export interface MessageList {
  messages: Message[];
  next: string | null;
}

// ---- humans, directory, fleet (§9–§10) ----

export interface AgentRow {
  id: string;
  label: string | null;
  revoked: boolean;
  source: 'account' | 'config';
}

export interface MintedAgent {
  agent: { id: string; label: string | null };
  token: string;
}

export interface FleetRow {
  address: string;
  agent_id: string;
  agent_label: string | null;
  session_id: string;
  name: string | null;
  state: SessionState;
  reachability: Reachability;
  expires_at: string;
  last_renewed_at: string | null;
  holder: { host: string; pid: number } | null;
}

export interface AccountState {
  agent_messaging: boolean | null;
}

/** One recorded operator stop (the reference Hub's `GET /v1/operator-stops`, human token). */
export interface OperatorStop {
  agent_id: string;
  agent_label: string | null;
  client_key: string | null;
  name: string | null;
  session_id: string | null;
  recorded_at: string;
}

export interface LiftResult {
  lifted: number | null;
}

// ---- errors (§0, §12) ----

export interface HubErrorBody {
  code: string;
  message: string;
  /** Every other key of the `error` object (e.g. `holder`, `state`). */
  details: Record<string, unknown>;
}

// ---- request bodies ----

export interface CreateSessionRequest {
  client_key: string;
  name?: string;
  lease_seconds?: number;
  home?: string;
  host?: string;
  pid?: number;
}

export interface SendRequest {
  to: string;
  intent: MessageIntent;
  text: string;
  session?: string;
  in_reply_to?: string;
  idempotency_key?: string;
}

export interface RespondRequest {
  text: string;
  session?: string;
}

export interface AckRequest {
  session?: string;
  delivered?: string[];
  acknowledged?: string[];
}

export interface DirectiveRequest {
  to: string;
  text: string;
}

export interface LiftRequest {
  agent_id: string;
  client_key?: string;
  name?: string;
}

export interface AccountPatch {
  agent_messaging: boolean;
}

export interface MintAgentRequest {
  label: string;
}

export interface ConsumerIdentity {
  home: string;
  host: string;
  pid: number;
}
