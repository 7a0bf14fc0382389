import { type Result } from '../../core/index.js';
import { validateAgentId, validateId } from './ids.js';
import { arr, bad, bool, describe, guard, instant, int, isObj, must, num, obj, oneOf, optInstant, optOneOf, optStr, str, type Obj } from '../../util/shape.js';
import type {
  AccountState,
  AckResult,
  AgentRow,
  ClosedEvent,
  ClosedReason,
  DrainResult,
  EntriesEvent,
  FleetRow,
  HubErrorBody,
  LiftResult,
  Message,
  MessageList,
  MessageState,
  MintedAgent,
  OpenEvent,
  OperatorStop,
  Reachability,
  ReconnectEvent,
  SentMessage,
  Session,
  SessionHolder,
  SessionLease,
  SessionState,
  Whoami,
} from './types.js';

/*
 * Every parser takes a whole response body (or SSE `data:` JSON) as received. Unknown
 * fields are ignored (MA2H §0, forward compatibility); a missing or mistyped required
 * field is a failure that names it — the Hub is buggy or hostile.
 */

export const SESSION_STATES: readonly SessionState[] = ['active', 'lapsed', 'closed', 'closed_by_operator'];
export const MESSAGE_STATES: readonly MessageState[] = ['queued', 'delivered', 'acknowledged', 'bounced', 'expired'];
export const REACHABILITY: readonly Reachability[] = ['online', 'offline', 'unknown'];
export const CLOSED_REASONS: readonly ClosedReason[] = ['closed', 'closed_by_operator', 'lapsed', 'replaced'];
const MESSAGE_OBJECT_INTENTS = ['notify', 'ask', 'task', 'directive', 'response'] as const;

function positive(o: Obj, key: string, where: string): number {
  const v = num(o, key, where);
  if (v <= 0) bad(`${where} field '${key}' must be positive, got ${v}`);
  return v;
}

function id(o: Obj, key: string, where: string): string {
  return must(validateId(str(o, key, where), `${where} field '${key}'`));
}

/**
 * This agent's own id (whoami, a mint, its session) becomes a state-entry key and its address:
 * one that breaks the id grammar is refused here, at the edge. Lists (the directory, the fleet)
 * keep such rows: a Hub's configured token store may hold them, and their readers drop them
 * one by one, saying why (the policy writer's "dropped agent …").
 */
function agentId(o: Obj, key: string, where: string): string {
  return must(validateAgentId(str(o, key, where), `${where} field '${key}'`));
}

function nullableObj(o: Obj, key: string, where: string): Obj | null {
  const v = o[key];
  if (v === undefined || v === null) return null;
  return obj(v, `${where} field '${key}'`);
}

export function readLease(x: unknown, where: string): SessionLease {
  const o = obj(x, where);
  return { id: id(o, 'id', where), expires_at: instant(o, 'expires_at', where), lease_seconds: positive(o, 'lease_seconds', where) };
}

function readHolder(o: Obj, where: string): SessionHolder {
  return {
    home: str(o, 'home', where),
    host: str(o, 'host', where),
    pid: int(o, 'pid', where),
    since: optInstant(o, 'since', where),
    last_seen_at: optInstant(o, 'last_seen_at', where),
  };
}

export function readSession(x: unknown, where = 'session'): Session {
  const o = obj(x, where);
  const holder = nullableObj(o, 'holder', where);
  return {
    id: id(o, 'id', where),
    agent_id: agentId(o, 'agent_id', where),
    address: str(o, 'address', where),
    name: optStr(o, 'name', where),
    state: oneOf(o, 'state', SESSION_STATES, where),
    lease_seconds: positive(o, 'lease_seconds', where),
    expires_at: instant(o, 'expires_at', where),
    last_renewed_at: instant(o, 'last_renewed_at', where),
    created_at: instant(o, 'created_at', where),
    closed_at: optInstant(o, 'closed_at', where),
    holder: holder && readHolder(holder, `${where} holder`),
  };
}

export function readMessage(x: unknown, where = 'message'): Message {
  const o = obj(x, where);
  const destination = nullableObj(o, 'destination', where);
  const response = nullableObj(o, 'response', where);
  return {
    id: id(o, 'id', where),
    from: str(o, 'from', where),
    to: str(o, 'to', where),
    intent: oneOf(o, 'intent', MESSAGE_OBJECT_INTENTS, where),
    text: str(o, 'text', where),
    created_at: instant(o, 'created_at', where),
    state: oneOf(o, 'state', MESSAGE_STATES, where),
    prior: optOneOf(o, 'prior', ['queued', 'delivered'] as const, where),
    track: arr(o, 'track', where).map((step, i) => {
      const s = obj(step, `${where} track[${i}]`);
      return { state: oneOf(s, 'state', MESSAGE_STATES, `${where} track[${i}]`), at: instant(s, 'at', `${where} track[${i}]`) };
    }),
    destination: destination && {
      address: str(destination, 'address', `${where} destination`),
      snapshot: oneOf(destination, 'snapshot', REACHABILITY, `${where} destination`),
    },
    response: response && {
      message_id: str(response, 'message_id', `${where} response`),
      text: str(response, 'text', `${where} response`),
      at: instant(response, 'at', `${where} response`),
    },
    in_reply_to: optStr(o, 'in_reply_to', where),
    idempotent_replay: o.idempotent_replay === true,
  };
}

const leaseOrNull = (b: Obj, where: string): SessionLease | null =>
  b.session === undefined || b.session === null ? null : readLease(b.session, `${where} session`);

/** `{"session": Session}` — create, get, close, operator-close. */
export const parseSession = (x: unknown): Result<Session> => guard('session response', () => readSession(obj(x, 'body').session, "field 'session'"));

/** The renewed lease `{"session": {id, expires_at, lease_seconds}}` of a response that presented a session. */
export const parseSessionLease = (x: unknown): Result<SessionLease> => guard('session lease', () => readLease(obj(x, 'body').session, "field 'session'"));

/** `{"message": Message}` — getMessage, directive. */
export const parseMessage = (x: unknown): Result<Message> => guard('message response', () => readMessage(obj(x, 'body').message, "field 'message'"));

/** A send or respond answer; `idempotent_replay` may sit beside or inside `message`. */
export const parseSentMessage = (x: unknown): Result<SentMessage> =>
  guard('send response', () => {
    const b = obj(x, 'body');
    const message = readMessage(b.message, "field 'message'");
    if (b.idempotent_replay === true) message.idempotent_replay = true;
    return { message, session: leaseOrNull(b, 'body') };
  });

export const parseMessageList = (x: unknown): Result<MessageList> =>
  guard('message list', () => {
    const b = obj(x, 'body');
    return { messages: arr(b, 'messages', 'body').map((m, i) => readMessage(m, `messages[${i}]`)), next: optStr(b, 'next', 'body') };
  });

export const parseFleet = (x: unknown): Result<FleetRow[]> =>
  guard('fleet response', () =>
    arr(obj(x, 'body'), 'sessions', 'body').map((row, i) => {
      const where = `sessions[${i}]`;
      const o = obj(row, where);
      const holder = nullableObj(o, 'holder', where);
      return {
        address: str(o, 'address', where),
        agent_id: str(o, 'agent_id', where),
        agent_label: optStr(o, 'agent_label', where),
        session_id: str(o, 'session_id', where),
        name: optStr(o, 'name', where),
        state: oneOf(o, 'state', SESSION_STATES, where),
        reachability: oneOf(o, 'reachability', REACHABILITY, where),
        expires_at: instant(o, 'expires_at', where),
        last_renewed_at: optInstant(o, 'last_renewed_at', where),
        holder: holder && { host: str(holder, 'host', `${where} holder`), pid: int(holder, 'pid', `${where} holder`) },
      };
    }),
  );

function readAgentRow(x: unknown, where: string): AgentRow {
  const o = obj(x, where);
  return {
    id: str(o, 'id', where),
    label: optStr(o, 'label', where),
    revoked: bool(o, 'revoked', where),
    source: oneOf(o, 'source', ['account', 'config'] as const, where),
  };
}

/** `{"agents": [{id, label, revoked, source}]}` (§10). */
export const parseAgents = (x: unknown): Result<AgentRow[]> =>
  guard('agent directory', () => arr(obj(x, 'body'), 'agents', 'body').map((row, i) => readAgentRow(row, `agents[${i}]`)));

/** `201 {"agent": {...}, "token": "…"}`. */
export const parseMintedAgent = (x: unknown): Result<MintedAgent> =>
  guard('mint response', () => {
    const b = obj(x, 'body');
    const agent = obj(b.agent, "field 'agent'");
    const token = str(b, 'token', 'body');
    if (token.length === 0) bad("field 'token' is empty");
    return { agent: { id: agentId(agent, 'id', 'agent'), label: optStr(agent, 'label', 'agent') }, token };
  });

export const parseWhoami = (x: unknown): Result<Whoami> =>
  guard('whoami response', () => {
    const b = obj(x, 'body');
    const kind = oneOf(b, 'kind', ['agent', 'human'] as const, 'body');
    if (kind === 'agent') {
      const a = obj(b.agent, "field 'agent'");
      return { kind, agent: { id: agentId(a, 'id', 'agent'), label: optStr(a, 'label', 'agent'), account_id: id(a, 'account_id', 'agent') } };
    }
    const a = obj(b.account, "field 'account'");
    return { kind, account: { id: id(a, 'id', 'account'), label: optStr(a, 'label', 'account') } };
  });

export const parseAckResult = (x: unknown): Result<AckResult> =>
  guard('ack response', () => {
    const b = obj(x, 'body');
    const unknown = arr(b, 'unknown', 'body');
    if (!unknown.every((u): u is string => typeof u === 'string')) bad("body field 'unknown' must be an array of entry ids");
    return {
      delivered: int(b, 'delivered', 'body'),
      acknowledged: int(b, 'acknowledged', 'body'),
      unknown,
      session: leaseOrNull(b, 'body'),
    };
  });

/** `{"session"?: lease, "messages": [Delivery…]}`; each delivery stays unknown for the verifier. */
export const parseDrain = (x: unknown): Result<DrainResult> =>
  guard('drain response', () => {
    const b = obj(x, 'body');
    return { session: leaseOrNull(b, 'body'), messages: arr(b, 'messages', 'body') };
  });

export const parseAccountState = (x: unknown): Result<AccountState> =>
  guard('account response', () => {
    const b = obj(x, 'body');
    const account = isObj(b.account) ? b.account : b;
    const v = account.agent_messaging;
    if (v !== undefined && typeof v !== 'boolean') bad(`field 'agent_messaging' must be true or false, got ${describe(v)}`);
    return { agent_messaging: v ?? null };
  });

/** The reference Hub's `{"stops": [{agent_id, agent_label, client_key, name, session_id, recorded_at}]}`. */
export const parseOperatorStops = (x: unknown): Result<OperatorStop[]> =>
  guard('operator stops', () =>
    arr(obj(x, 'body'), 'stops', 'body').map((row, i) => {
      const where = `stops[${i}]`;
      const o = obj(row, where);
      return {
        agent_id: str(o, 'agent_id', where),
        agent_label: optStr(o, 'agent_label', where),
        client_key: optStr(o, 'client_key', where),
        name: optStr(o, 'name', where),
        session_id: optStr(o, 'session_id', where),
        recorded_at: instant(o, 'recorded_at', where),
      };
    }),
  );

export const parseLiftResult = (x: unknown): Result<LiftResult> =>
  guard('lift response', () => {
    const b = obj(x, 'body');
    return { lifted: b.lifted === undefined || b.lifted === null ? null : int(b, 'lifted', 'body') };
  });

/** SSE `event: open` data. */
export const parseOpenEvent = (x: unknown): Result<OpenEvent> =>
  guard('open event', () => {
    const o = obj(x, 'data');
    const session = id(o, 'session', 'data');
    const expires_at = instant(o, 'expires_at', 'data');
    const lease_seconds = positive(o, 'lease_seconds', 'data');
    const hold_ms = num(o, 'hold_ms', 'data');
    if (hold_ms < 0) bad(`data field 'hold_ms' must not be negative, got ${hold_ms}`);
    const maxHold = o.stream_max_hold_seconds;
    return {
      session,
      expires_at,
      lease_seconds,
      hold_ms,
      stream_max_hold_seconds: maxHold === undefined || maxHold === null ? null : positive(o, 'stream_max_hold_seconds', 'data'),
    };
  });

/** SSE `event: entries` data; deliveries stay unknown for the verifier. */
export const parseEntriesEvent = (x: unknown): Result<EntriesEvent> => guard('entries event', () => ({ messages: arr(obj(x, 'data'), 'messages', 'data') }));

export const parseClosedEvent = (x: unknown): Result<ClosedEvent> =>
  guard('closed event', () => ({ reason: oneOf(obj(x, 'data'), 'reason', CLOSED_REASONS, 'data') }));

export const parseReconnectEvent = (x: unknown): Result<ReconnectEvent> => guard('reconnect event', () => ({ reason: str(obj(x, 'data'), 'reason', 'data') }));

/** `{"error": {"code", "message", ...details}}` (§0). */
export const parseHubError = (x: unknown): Result<HubErrorBody> =>
  guard('error body', () => {
    const e = obj(obj(x, 'body').error, "field 'error'");
    const code = str(e, 'code', 'error');
    const message = optStr(e, 'message', 'error') ?? code;
    const details = Object.fromEntries(Object.entries(e).filter(([k]) => k !== 'code' && k !== 'message'));
    return { code, message, details };
  });
