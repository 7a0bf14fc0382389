import type { DirectiveEntry, DirectiveRequest, Entry, MessageEntry, Reachability, RespondRequest, ResponseEntry, SendRequest } from '../contract/index.js';
import { canonicalJson, formatAddress, parseAddress, sessionEndedCode } from '../contract/index.js';
import { createHash } from 'node:crypto';
import { findAgent } from './agents.js';
import type { Caller } from './auth.js';
import type { HubCore } from './core.js';
import { entryRow, insertWithEntry, mailboxKey, mailWakes, type EntryTarget } from './entries.js';
import { bad, good, type Answer } from './http.js';
import { iso, newId } from './ids.js';
import { principalReachability, sessionReachability } from './presence.js';
import { current, presentForSend, presentSession, sessionById, ShapedStatements, type SessionLeaseRow, type SessionRow } from './sessions.js';
import { AGENT_LOCK, insertStatement, type Formed, type Param, type Sql, type Store, type Tx, type WakeTopic } from './sql.js';
import { markUndeliverable, messageById, replyTarget, type MessageRow } from './track.js';

export interface Sent {
  row: MessageRow;
  replay: boolean;
  lease: SessionLeaseRow | null;
}

interface Recipient {
  agentId: string;
  session: SessionRow | null;
  snapshot: 'online' | 'offline' | 'unknown';
}

/**
 * The lock a send takes on its recipient session's row (`s`), held until it commits: a session's end
 * (sessions.ts endSession) locks the row FOR UPDATE, marks it ended and bounces the mail pending in
 * it, all in one unit. Read without a lock, a send could decide from the session as active and
 * commit its entry after that unit's scan: pending for good in a session nothing reads any more
 * (the sender told `queued` until the message TTL expired it, where §3 says it bounces). KEY SHARE
 * is the weakest lock an end's FOR UPDATE waits for, and it waits for no renewal (those take NO KEY
 * UPDATE), so a stream's reconnects and the presence refresh never queue behind sends. A read
 * that waited for an end that committed sees the row as ended (PostgreSQL re-reads a locked row
 * at its latest version). Taken before the agent's lock: an end takes an agent's lock only after
 * its session's row (receipts), never the other way (registerSession's adopt takes NO KEY UPDATE).
 */
const SESSION_GUARD = 'FOR KEY SHARE OF s';

/** Resolve a `to` address: a known, unrevoked agent of the account, and for a session address a live session of it. */
async function resolveRecipient(core: HubCore, tx: Tx, to: string): Promise<Answer<Recipient>> {
  const addr = parseAddress(to, "field 'to'");
  if (!addr.ok) return bad(400, 'invalid_request', addr.reason);
  if (addr.value.sessionId !== null) {
    // The common case in one statement: the session with its agent's standing, share-locked until
    // the unit commits (SESSION_GUARD): a close waits for this send's entry, or this read waits for
    // the close and finds the session ended.
    const joined = await tx.get<SessionRow & { agent_revoked: number | null }>(
      `SELECT s.*, a.revoked AS agent_revoked FROM sessions AS s LEFT JOIN agents AS a ON a.id = s.agent_id WHERE s.id = CAST(? AS TEXT) ${SESSION_GUARD}`,
      addr.value.sessionId,
    );
    if (joined !== null && joined.agent_id === addr.value.agentId) {
      const { agent_revoked, ...found } = joined;
      const live = agent_revoked === null ? [...core.configAgents.values()].includes(found.agent_id) : agent_revoked !== 1;
      if (live) return sessionRecipient(core, tx, found);
    }
  }
  const agent = await findAgent(core, tx, addr.value.agentId);
  if (!agent || agent.revoked) return bad(404, 'recipient_not_found', `no agent ${addr.value.agentId} in this account can receive mail`);
  if (addr.value.sessionId === null) {
    return good({ agentId: agent.id, session: null, snapshot: await principalReachability(core, tx, agent.id, tx.now) });
  }
  return bad(404, 'recipient_not_found', `agent ${agent.id} has no session ${addr.value.sessionId}`);
}

/** A live session of a known agent: the recipient, unless its lease has run out. */
async function sessionRecipient(core: HubCore, tx: Tx, found: SessionRow): Promise<Answer<Recipient>> {
  const s = await current(core, tx, found);
  if (s.state !== 'active') return sendTargetEnded(s);
  return good({ agentId: s.agent_id, session: s, snapshot: sessionReachability(core, s, tx.now) });
}

/** A send to a session address that is not live is 410 `session_<state>` with a `state` detail (§12). */
function sendTargetEnded(s: SessionRow): Answer<Recipient> {
  const state = s.state as 'lapsed' | 'closed' | 'closed_by_operator';
  return bad(410, sessionEndedCode(state), `session ${s.id} is ${state.replace(/_/g, ' ')}; it receives no more mail`, { state });
}

type NewMessage = Omit<MessageRow, 'seq' | 'state' | 'prior' | 'track' | 'response_id' | 'response_text' | 'response_at'>;

/** What a new message's row stores as it is: the rest (its instant, track, destination) is formed (by the one statement, or here). */
type MessageColumns = Omit<NewMessage, 'created_at' | 'destination'>;

const messageColumns = (m: MessageColumns): MessageColumns => ({
  id: m.id,
  intent: m.intent,
  from_addr: m.from_addr,
  from_agent: m.from_agent,
  reply_session: m.reply_session,
  to_addr: m.to_addr,
  to_agent: m.to_agent,
  to_session: m.to_session,
  text: m.text,
  in_reply_to: m.in_reply_to,
  idempotency_key: m.idempotency_key,
  request_hash: m.request_hash,
});

/**
 * The row a new message is stored as, but its seq. Its columns are added to {@link messageColumns}'s
 * object, not spread with it into a literal: V8 built such a spread on a slow path (~5.5 KB and ~13 µs a
 * call against ~0.4 KB and ~0.15 µs, Node 20), and this runs once per send.
 */
const newRow = (m: NewMessage): Omit<MessageRow, 'seq'> =>
  queuedRow(messageColumns(m), m.created_at, JSON.stringify([{ state: 'queued', at: iso(m.created_at) }]), m.destination);

/** A queued message's row: `columns` with its instant, track and destination (null where a statement forms them) added. */
const queuedRow = <C extends MessageColumns, N extends number | null, S extends string | null>(columns: C, created_at: N, track: S, destination: S) =>
  Object.assign(columns, {
    created_at,
    state: 'queued' as const,
    prior: null,
    track,
    destination,
    response_id: null,
    response_text: null,
    response_at: null,
  });

/**
 * A message with no entry (a response that bounced). Only the seq comes back (RETURNING, in the
 * insert's own round trip): the rest of the row is what was written, so the message's text is not
 * sent back and parsed again.
 */
async function insertMessage(tx: Tx, m: NewMessage): Promise<MessageRow> {
  const row = newRow(m);
  const st = insertStatement({ table: 'messages', row });
  return { seq: (await tx.get<{ seq: number }>(`${st.sql} RETURNING seq`, ...st.params))!.seq, ...row };
}

/** A message and its recipient's entry: on PostgreSQL one statement with the recipient's lock (Tx.insertLocked). */
async function insertDelivered(tx: Tx, m: NewMessage, entry: Entry, to: EntryTarget): Promise<MessageRow> {
  const row = newRow(m);
  return { seq: await insertWithEntry(tx, { table: 'messages', row }, entry, to, m.id), ...row };
}

const requestHash = (req: SendRequest): string =>
  createHash('sha256')
    .update(canonicalJson({ to: req.to, intent: req.intent, text: req.text, session: req.session ?? null, in_reply_to: req.in_reply_to ?? null }))
    .digest('hex');

/**
 * `POST /v1/messages` (§8): on PostgreSQL the common case in ONE statement ({@link insertInOne});
 * whatever it does not take (a replay, a refusal, a case the locked path decides) the unit
 * {@link sendMessage} decides and answers, as every send was answered before.
 */
export async function send(core: HubCore, store: Store, agentId: string, req: SendRequest): Promise<Answer<Sent>> {
  // Only a send with a key can be replayed or conflict: the hash is what a later one compares.
  const hash = req.idempotency_key === undefined ? null : requestHash(req);
  const inOne = await addressedInOne(
    core,
    store,
    req.to,
    (to) => sendDraft(agentId, req, to, hash, 0, 'unknown'),
    req.idempotency_key === undefined ? null : { agentId, key: req.idempotency_key },
    req.session === undefined ? null : { agentId, sessionId: req.session },
  );
  if (inOne !== null) return good({ ...inOne, replay: false });
  return store.write((tx) => sendMessage(core, tx, agentId, req, hash));
}

/**
 * {@link insertInOne} of what `draft` makes for the address `to` (a session's mailbox or its agent's
 * principal one), on PostgreSQL, taken only while `key` (the sender's idempotency key) is unused;
 * null when it did not take it (another store, an invalid address, a miss): the caller's unit decides.
 */
async function addressedInOne(
  core: HubCore,
  store: Store,
  to: string,
  draft: (to: EntryTarget) => Draft,
  key: { agentId: string; key: string } | null,
  lease: InOne['lease'],
): Promise<{ row: MessageRow; lease: SessionLeaseRow | null } | null> {
  if (store.kind !== 'postgres') return null;
  const addr = parseAddress(to, "field 'to'");
  if (!addr.ok) return null;
  const { agentId, sessionId } = addr.value;
  const target: Target = {
    kind: sessionId === null ? 'principal' : 'session',
    open: sessionId === null ? mailboxOpen(core, agentId) : sessionOpen(core, sessionId),
    ask: null,
    responder: null,
    key,
  };
  return insertInOne(core, store, { ...draft({ agentId, sessionId }), to: { agentId, sessionId }, target, lease, wakes: NO_WAKES });
}

const NO_WAKES: Array<[WakeTopic, string]> = [];

/** Whether a stream of the session is open here (the unit's {@link sessionReachability} counts it online). */
const sessionOpen = (core: HubCore, sessionId: string): boolean => core.streams.isOpen(sessionId);

/** Whether a stream listens on the agent's principal mailbox here (every stream of the agent does). */
const mailboxOpen = (core: HubCore, agentId: string): boolean => core.bus.mail.listening(mailboxKey(agentId, null));

/** `?now - <at>` within the presence window (a parameter): NULL, not true, when `at` is. */
const seenWithin = (at: string): string => `?now - ${at} <= CAST(? AS DOUBLE PRECISION)`;

/** The unit's {@link sessionReachability} of the session row `s` (alias): `open` is 1 when a stream of it is open here. */
const sessionSnapshot = (v: InOneValues): Formed => ({
  sql: `CASE WHEN CAST(? AS INTEGER) = 1 THEN 'online' WHEN s.seen_at IS NULL THEN 'unknown' WHEN ${seenWithin('s.seen_at')} THEN 'online' ELSE 'offline' END`,
  params: [v.open, v.presence_ms],
});

/**
 * The unit's {@link principalReachability} of the agent `agent` (SQL naming its id), its principal
 * presence row joined as `p`. A stream of the agent open here (`open` 1) counts as the unit counts
 * it (its session online): every stream listens on its agent's principal mailbox.
 */
const principalSnapshot = (v: InOneValues, agent: string): Formed => ({
  sql: `CASE WHEN CAST(? AS INTEGER) = 1 OR ${seenWithin('p.seen_at')}
      OR EXISTS (SELECT 1 FROM sessions AS l WHERE l.agent_id = ${agent} AND l.state = 'active' AND ${seenWithin('l.seen_at')}) THEN 'online'
    WHEN p.seen_at IS NOT NULL OR EXISTS (SELECT 1 FROM sessions AS e WHERE e.agent_id = ${agent} AND e.seen_at IS NOT NULL) THEN 'offline'
    ELSE 'unknown' END`,
  params: [v.open, v.presence_ms, v.presence_ms],
});

/** A keyed send's check that its key is still unused by the sender. */
const keyUnused = (v: InOneValues): Formed => ({
  sql: ' AND NOT EXISTS (SELECT 1 FROM messages WHERE from_agent = CAST(? AS TEXT) AND idempotency_key = CAST(? AS TEXT))',
  params: [v.key_agent, v.key],
});

/**
 * A session address's checks: the session active and unexpired, of its agent, that agent not
 * revoked (and the sender's key unused, `unused`); its row share-locked.
 */
function sessionTarget(v: InOneValues, unused: Formed): Formed {
  const snapshot = sessionSnapshot(v);
  return {
    sql: `SELECT ${snapshot.sql} AS snapshot FROM sessions AS s JOIN agents AS a ON a.id = s.agent_id
       WHERE s.id = CAST(? AS TEXT) AND s.agent_id = CAST(? AS TEXT) AND a.revoked = 0 AND s.state = 'active' AND s.expires_at > ?now${unused.sql}
       ${SESSION_GUARD}`,
    params: [...snapshot.params, v.to_session, v.to_agent, ...unused.params],
  };
}

/**
 * A principal address's check: the agent not revoked (an agent only MA2H_AGENT_TOKENS names has no
 * row: the unit), and the sender's key unused (`unused`). Nothing ends a principal mailbox, so
 * nothing is locked.
 */
function principalTarget(v: InOneValues, unused: Formed): Formed {
  const snapshot = principalSnapshot(v, 'a.id');
  return {
    sql: `SELECT ${snapshot.sql} AS snapshot FROM agents AS a LEFT JOIN principal_presence AS p ON p.agent_id = a.id
       WHERE a.id = CAST(? AS TEXT) AND a.revoked = 0${unused.sql}`,
    params: [...snapshot.params, v.to_agent, ...unused.params],
  };
}

/**
 * The message and entry of a send, as of `now` with the recipient `snapshot`; `to` is where its
 * entry goes (a session's mailbox, or the principal one).
 */
function sendDraft(agentId: string, req: SendRequest, to: EntryTarget, hash: string | null, now: number, snapshot: Reachability): Draft {
  const m: NewMessage = {
    id: newId('msg'),
    intent: req.intent,
    from_addr: formatAddress(agentId, req.session ?? null),
    from_agent: agentId,
    reply_session: req.session ?? null,
    to_addr: req.to,
    to_agent: to.agentId,
    to_session: to.sessionId,
    text: req.text,
    in_reply_to: req.in_reply_to ?? null,
    created_at: now,
    destination: destination(req.to, snapshot),
    idempotency_key: req.idempotency_key ?? null,
    request_hash: hash,
  };
  const entry: MessageEntry = {
    id: newId('ent'),
    kind: 'message',
    from: m.from_addr,
    to: m.to_addr,
    created_at: iso(now),
    message_id: m.id,
    intent: req.intent,
    text: req.text,
  };
  if (req.in_reply_to !== undefined) entry.in_reply_to = req.in_reply_to;
  return { m, entry };
}

const destination = (address: string, snapshot: Reachability): string => JSON.stringify({ address, snapshot });

/**
 * The unit of `POST /v1/messages` (§8): queue a message entry for the recipient; idempotent on
 * `idempotency_key` (`hash` is the request's, null without one). Two sends with one key racing
 * on two instances: the unique index makes the second insert wait for the first and fail; its
 * unit is run again and finds the first (the PostgreSQL store retries a unit on a unique violation).
 */
export async function sendMessage(core: HubCore, tx: Tx, agentId: string, req: SendRequest, hash: string | null): Promise<Answer<Sent>> {
  if (req.idempotency_key !== undefined) {
    const prior = await tx.get<MessageRow>('SELECT * FROM messages WHERE from_agent = ? AND idempotency_key = ?', agentId, req.idempotency_key);
    if (prior && prior.request_hash !== hash) {
      return bad(409, 'idempotency_conflict', `idempotency_key ${req.idempotency_key} was already used for a different message (${prior.id})`, {
        message_id: prior.id,
      });
    }
    if (prior) {
      // The first attempt may have committed and died before it told the other instances (its
      // answer waits for that, so its sender retries): the retry tells them, a hint at worst twice.
      for (const [topic, key] of mailWakes({ agentId: prior.to_agent, sessionId: prior.to_session })) tx.wake(topic, key);
      return good({ row: prior, replay: true, lease: null });
    }
  }
  let lease: SessionRow | null = null;
  if (req.session !== undefined) {
    const presented = await presentSession(core, tx, agentId, req.session, { consumer: null, connect: false });
    if (!presented.ok) return presented;
    lease = presented.value;
  }
  const to = await resolveRecipient(core, tx, req.to);
  if (!to.ok) return to;
  const target = { agentId: to.value.agentId, sessionId: to.value.session?.id ?? null };
  const { m, entry } = sendDraft(agentId, req, target, hash, tx.now, to.value.snapshot);
  const row = await insertDelivered(tx, m, entry, target);
  return good({ row, replay: false, lease });
}

/** A message and its entry, but what the statement storing them decides. */
interface Draft {
  m: NewMessage;
  entry: Entry;
}

/** What {@link insertInOne} stores, and decides first. */
interface InOne extends Draft {
  /** The mailbox the entry goes to (the message's recipient). */
  to: EntryTarget;
  /** How the statement checks its recipient first. */
  target: Target;
  /** The sender's session, presented (renewed) by the same statement. */
  lease: { agentId: string; sessionId: string } | null;
  /** Wake-ups beside the mailbox's. */
  wakes: Array<[WakeTopic, string]>;
}

/**
 * The statement's first part, `target`: one row, the recipient's `snapshot`, when every check of
 * the recipient (and of the sender's key) holds, with what an end of the recipient changes locked;
 * no row else. A send checks a session or a principal address; a response checks its ask (which
 * the same statement marks answered) and the asker's session or principal mailbox.
 */
interface Target {
  kind: 'session' | 'principal' | 'answer-session' | 'answer-principal';
  /** A stream of the recipient open here: the unit counts it online. */
  open: boolean;
  /** A response's ask and its responder. */
  ask: string | null;
  responder: string | null;
  /** The sender's idempotency key, which must still be unused. */
  key: { agentId: string; key: string } | null;
}

/**
 * What an {@link insertInOne} statement binds: the rest of its text is fixed by its shape (the
 * target's kind, a key, a lease), so it is made once per shape ({@link ShapedStatements}). The
 * message's recipient is its entry's mailbox (`to_agent`, `to_session`), which the target checks.
 */
type InOneValues = MessageColumns & {
  open: number;
  presence_ms: number;
  ask: string | null;
  responder: string | null;
  key_agent: string | null;
  key: string | null;
  lease_agent: string | null;
  lease_session: string | null;
  /** The destination's JSON up to its snapshot's value (the statement's target decides it). */
  dest_head: string;
  entry_id: string;
  entry_kind: string;
  /** The entry's canonical JSON after its created_at's value (the statement's clock). */
  body_tail: string;
};

const inOneStatements = new ShapedStatements<InOneValues>();

/** The shapes' names by kind, then [key] [lease] (one string each, not one built, and hashed whole, per send). */
const IN_ONE_SHAPES: Record<Target['kind'], readonly [string, string, string, string]> = {
  session: ['session', 'session+lease', 'session+key', 'session+key+lease'],
  principal: ['principal', 'principal+lease', 'principal+key', 'principal+key+lease'],
  'answer-session': ['answer-session', 'answer-session+lease', 'answer-session+key', 'answer-session+key+lease'],
  'answer-principal': ['answer-principal', 'answer-principal+lease', 'answer-principal+key', 'answer-principal+key+lease'],
};

/** The statement's clock as a column's value. */
const AT_NOW: Formed = { sql: '?now', params: [] };

/** The JSON texts' ends around the statement's decisions: a message's track and destination, an entry's body. */
const TRACK_HEAD = JSON.stringify([{ state: 'queued', at: '' }]).slice(0, -3);
const TRACK_TAIL = '"}]';
const DEST_TAIL = '"}';
const BODY_HEAD = '{"created_at":"';

/** Where a JSON text's value decided by the statement goes: `head`, then `expr`, then `tail`. */
const spliced = (head: Param, expr: string, tail: Param): Formed => ({ sql: `CAST(? AS TEXT) || ${expr} || CAST(? AS TEXT)`, params: [head, tail] });

/** The statement's instant as `Date.toISOString` writes it (to the ms, UTC; to_char of a timestamp without time zone applies none). */
const ISO_AT = `to_char(TIMESTAMP 'epoch' + ?now * INTERVAL '1 millisecond', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/** A {@link insertInOne} row. */
interface InOneRow {
  seq: number;
  now: number;
  snapshot: Reachability;
  lease_id?: string;
  expires_at?: number;
  lease_seconds?: number;
}

/**
 * A send, the human's directive or a response as ONE statement on its own (PostgreSQL, `Store.once`:
 * autocommit, one round trip where the unit took four or more): the deployment's clock read inside
 * it; the recipient's checks and reachability (`target`: for a session address the session active and
 * unexpired, of its agent, that agent not revoked, its row share-locked ({@link SESSION_GUARD}); the
 * idempotency key not used yet); the sender's session presented
 * (renewed, a data-modifying CTE); the recipient agent's lock ({@link AGENT_LOCK}, held from before
 * either seq is drawn until the commit: its entries still commit in seq order); the message and
 * the entry (their instants and the texts holding them formed from the statement's clock); a
 * response's ask marked answered. Its
 * wake-ups are woken here once committed and told to the other instances before the answer.
 * Each part is taken only when every check before it held, so a miss changes nothing and answers
 * no rows: null, and the unit decides (and words any refusal) as before. The answer is given only
 * once the statement has committed.
 */
async function insertInOne(core: HubCore, store: Store, s: InOne): Promise<{ row: MessageRow; lease: SessionLeaseRow | null } | null> {
  // The entry's canonical JSON with its instant left empty: created_at is its first key (every other sorts after it).
  const body = canonicalJson({ ...s.entry, created_at: '' });
  if (!body.startsWith(`${BODY_HEAD}"`)) throw new Error(`an entry's canonical JSON starts with its created_at: ${body.slice(0, 40)}`);
  const m = s.m;
  // Added to messageColumns' object, not spread into a literal (newRow says why).
  const values: InOneValues = Object.assign(messageColumns(m), {
    open: s.target.open ? 1 : 0,
    presence_ms: core.config.presenceSeconds * 1000,
    ask: s.target.ask,
    responder: s.target.responder,
    key_agent: s.target.key?.agentId ?? null,
    key: s.target.key?.key ?? null,
    lease_agent: s.lease?.agentId ?? null,
    lease_session: s.lease?.sessionId ?? null,
    dest_head: destination(m.to_addr, '' as Reachability).slice(0, -DEST_TAIL.length),
    entry_id: s.entry.id,
    entry_kind: s.entry.kind,
    body_tail: body.slice(BODY_HEAD.length),
  });
  const shape = IN_ONE_SHAPES[s.target.kind][(s.target.key === null ? 0 : 2) + (s.lease === null ? 0 : 1)]!;
  const kind = s.target.kind;
  const st = inOneStatements.bind(shape, values, (v) => inOneStatement(kind, s.target.key !== null, s.lease !== null, v));
  const [done] = await store.once<InOneRow>(st.sql, st.params, undefined, s.wakes.length === 0 ? mailWakes(s.to) : [...mailWakes(s.to), ...s.wakes]);
  if (done === undefined) return null;
  // The draft is this send's own: its instant and destination are the statement's.
  m.created_at = Number(done.now);
  m.destination = destination(m.to_addr, done.snapshot);
  return {
    row: Object.assign(newRow(m), { seq: done.seq }),
    lease: done.lease_id === undefined ? null : { id: done.lease_id, expires_at: done.expires_at!, lease_seconds: done.lease_seconds! },
  };
}

/** The {@link insertInOne} statement of one shape, its values `v` all parameters. */
function inOneStatement(kind: Target['kind'], keyed: boolean, leased: boolean, v: InOneValues): Formed {
  const unused: Formed = keyed ? keyUnused(v) : { sql: '', params: [] };
  const target = kind === 'session' ? sessionTarget(v, unused) : kind === 'principal' ? principalTarget(v, unused) : answerTarget(v, kind === 'answer-session');
  const params: Param[] = [...target.params];
  const ctes = [`target AS MATERIALIZED (${target.sql})`];
  let from = 'target';
  if (leased) {
    const renewed = presentForSend(v.lease_agent!, v.lease_session!, 'EXISTS (SELECT 1 FROM target)');
    ctes.push(`lease AS (${renewed.sql})`);
    params.push(...renewed.params);
    from = 'target CROSS JOIN lease';
  }
  ctes.push(`agent AS MATERIALIZED (SELECT ${AGENT_LOCK} AS locked, target.snapshot, ${ISO_AT} AS at FROM ${from})`);
  params.push(v.to_agent);
  const message = insertStatement({ table: 'messages', row: queuedRow(messageColumns(v), null, null, null) }, 'agent', {
    created_at: AT_NOW,
    track: spliced(TRACK_HEAD, 'agent.at', TRACK_TAIL),
    destination: spliced(v.dest_head, 'agent.snapshot', DEST_TAIL),
  });
  ctes.push(`i0 AS (${message.sql} RETURNING seq)`);
  params.push(...message.params);
  const entry = insertStatement(entryRow(v.entry_id, v.entry_kind, { agentId: v.to_agent, sessionId: v.to_session }, v.id, null, null), 'agent', {
    created_at: AT_NOW,
    body: spliced(BODY_HEAD, 'agent.at', v.body_tail),
  });
  ctes.push(`i1 AS (${entry.sql})`);
  params.push(...entry.params);
  if (kind === 'answer-session' || kind === 'answer-principal') {
    ctes.push(
      'also AS (UPDATE messages SET response_id = CAST(? AS TEXT), response_text = CAST(? AS TEXT), response_at = ?now FROM agent WHERE messages.id = CAST(? AS TEXT))',
    );
    params.push(v.id, v.text, v.ask);
  }
  const leaseColumns = leased ? ', lease.id AS lease_id, lease.expires_at, lease.lease_seconds' : '';
  return {
    sql: `WITH ${ctes.join(', ')} SELECT i0.seq, ?now AS now, agent.snapshot${leaseColumns} FROM i0 CROSS JOIN agent${leased ? ' CROSS JOIN lease' : ''}`,
    params,
  };
}

/**
 * `POST /v1/messages/:id/respond` (§8): on PostgreSQL the common case — an unanswered ask or task
 * to this agent whose asker's session is active, or that named none — in one read and ONE statement
 * ({@link answerInOne}); anything else (a refusal, a response that bounces) the unit
 * {@link respondInUnit} decides and answers, as before.
 */
export async function respond(core: HubCore, store: Store, agentId: string, askId: string, req: RespondRequest): Promise<Answer<Sent>> {
  const inOne = await answerInOne(core, store, agentId, askId, req);
  if (inOne !== null) return good({ ...inOne, replay: false });
  return store.write((tx) => respondInUnit(core, tx, agentId, askId, req));
}

/** What a response is formed from: fields of the ask that never change once it is stored. */
type Ask = Pick<MessageRow, 'id' | 'from_agent' | 'reply_session'> & { from_agent: string };

/**
 * A response in ONE statement ({@link insertInOne}), after one read of the ask: the statement cannot
 * form the response's addresses and the asker session's reachability (a stream of it open here,
 * a parameter) without knowing the ask, so a read comes first. Its `target` then decides again
 * what the unit decides, under the same locks: the ask still unanswered (its row locked FOR
 * UPDATE, as the unit's read of it: of two responses racing, the second re-reads the answered row
 * and misses), the asker's session still active (share-locked, {@link SESSION_GUARD}); the ask is
 * marked answered by the same statement. A bounce (the asker's session ended) is the unit's.
 */
async function answerInOne(
  core: HubCore,
  store: Store,
  agentId: string,
  askId: string,
  req: RespondRequest,
): Promise<{ row: MessageRow; lease: SessionLeaseRow | null } | null> {
  if (store.kind !== 'postgres') return null;
  const ask = await store.read.get<MessageRow>(
    'SELECT id, intent, from_agent, reply_session, to_agent, response_id FROM messages WHERE id = CAST(? AS TEXT)',
    askId,
  );
  if (ask === null || ask.to_agent !== agentId || (ask.intent !== 'ask' && ask.intent !== 'task') || ask.from_agent === null || ask.response_id !== null) {
    return null;
  }
  const asked: Ask = { id: ask.id, from_agent: ask.from_agent, reply_session: ask.reply_session };
  const to = { agentId: asked.from_agent, sessionId: asked.reply_session };
  const { m, entry } = responseDraft(agentId, asked, req, 0, 'unknown');
  return insertInOne(core, store, {
    m,
    entry,
    to,
    target: {
      kind: asked.reply_session === null ? 'answer-principal' : 'answer-session',
      open: asked.reply_session === null ? mailboxOpen(core, asked.from_agent) : sessionOpen(core, asked.reply_session),
      ask: asked.id,
      responder: agentId,
      key: null,
    },
    lease: req.session === undefined ? null : { agentId, sessionId: req.session },
    wakes: [['message', asked.id]],
  });
}

/**
 * A response's checks: the ask `q` still the responder's to answer, and where its answer goes (the
 * asker's active session `s`, `session` true, or its principal mailbox).
 */
function answerTarget(v: InOneValues, session: boolean): Formed {
  const unanswered = `q.id = CAST(? AS TEXT) AND q.to_agent = CAST(? AS TEXT) AND q.from_agent = CAST(? AS TEXT) AND q.intent IN ('ask', 'task') AND q.response_id IS NULL`;
  const keys = [v.ask, v.responder, v.to_agent];
  if (!session) {
    const snapshot = principalSnapshot(v, 'q.from_agent');
    return {
      sql: `SELECT ${snapshot.sql} AS snapshot FROM messages AS q LEFT JOIN principal_presence AS p ON p.agent_id = q.from_agent
         WHERE ${unanswered} AND q.reply_session IS NULL FOR UPDATE OF q`,
      params: [...snapshot.params, ...keys],
    };
  }
  const snapshot = sessionSnapshot(v);
  return {
    sql: `SELECT ${snapshot.sql} AS snapshot FROM messages AS q JOIN sessions AS s ON s.id = q.reply_session AND s.agent_id = q.from_agent
       WHERE ${unanswered} AND q.reply_session = CAST(? AS TEXT) AND s.state = 'active' FOR UPDATE OF q ${SESSION_GUARD}`,
    params: [...snapshot.params, ...keys, v.to_session],
  };
}

/** The message and entry of `agentId`'s response to `ask`, as of `now` with the asker's `snapshot`. */
function responseDraft(agentId: string, ask: Ask, req: RespondRequest, now: number, snapshot: Reachability): Draft {
  const toAddr = formatAddress(ask.from_agent, ask.reply_session);
  const m: NewMessage = {
    id: newId('msg'),
    intent: 'response',
    from_addr: formatAddress(agentId, req.session ?? null),
    from_agent: agentId,
    reply_session: req.session ?? null,
    to_addr: toAddr,
    to_agent: ask.from_agent,
    to_session: ask.reply_session,
    text: req.text,
    in_reply_to: ask.id,
    created_at: now,
    destination: destination(toAddr, snapshot),
    idempotency_key: null,
    request_hash: null,
  };
  const entry: ResponseEntry = {
    id: newId('ent'),
    kind: 'response',
    from: m.from_addr,
    to: toAddr,
    created_at: iso(now),
    message_id: m.id,
    in_reply_to: ask.id,
    text: req.text,
  };
  return { m, entry };
}

/**
 * The unit of `POST /v1/messages/:id/respond` (§8): the recipient of an ask or task answers once.
 * The response goes to the asker's session while it is active; if that session has ended
 * the response bounces at once and the responder gets the receipt (§12).
 */
export async function respondInUnit(core: HubCore, tx: Tx, agentId: string, askId: string, req: RespondRequest): Promise<Answer<Sent>> {
  const ask = await messageById(tx, askId, true);
  if (!ask || ask.to_agent !== agentId) return bad(404, 'message_not_found', `no message ${askId} addressed to agent ${agentId}`);
  if ((ask.intent !== 'ask' && ask.intent !== 'task') || ask.from_agent === null) {
    return bad(409, 'not_respondable', `message ${askId} is a ${ask.intent}; only an ask or a task can be answered`);
  }
  if (ask.response_id !== null)
    return bad(409, 'already_responded', `message ${askId} already has a response (${ask.response_id})`, { response_id: ask.response_id });
  let lease: SessionRow | null = null;
  if (req.session !== undefined) {
    const presented = await presentSession(core, tx, agentId, req.session, { consumer: null, connect: false });
    if (!presented.ok) return presented;
    lease = presented.value;
  }
  const target = await replyTarget(tx, ask.from_agent, ask.reply_session);
  const bounced = ask.reply_session !== null && target.sessionId === null;
  const now = tx.now;
  const snapshot = bounced
    ? 'offline'
    : target.sessionId !== null
      ? sessionReachability(core, (await sessionById(tx, target.sessionId))!, now)
      : await principalReachability(core, tx, ask.from_agent, now);
  const { m, entry } = responseDraft(agentId, { id: ask.id, from_agent: ask.from_agent, reply_session: ask.reply_session }, req, now, snapshot);
  const row = bounced ? await insertMessage(tx, m) : await insertDelivered(tx, m, entry, target);
  await tx.run('UPDATE messages SET response_id = ?, response_text = ?, response_at = ? WHERE id = ?', row.id, req.text, now, ask.id);
  tx.wake('message', ask.id);
  if (bounced) {
    const ended = (await sessionById(tx, ask.reply_session!))!;
    const reason = ended.state === 'closed_by_operator' ? 'session_closed_by_operator' : ended.state === 'closed' ? 'session_closed' : 'session_lapsed';
    await markUndeliverable(tx, row.id, reason);
  }
  return good({ row: (await messageById(tx, row.id))!, replay: false, lease });
}

/** `POST /v1/directives` (§9): on PostgreSQL a directive to a live session or a principal address in ONE statement, as a send ({@link send}). */
export async function direct(core: HubCore, store: Store, req: DirectiveRequest): Promise<Answer<MessageRow>> {
  const inOne = await addressedInOne(core, store, req.to, (to) => directiveDraft(core, req, to, 0, 'unknown'), null, null);
  return inOne !== null ? good(inOne.row) : store.write((tx) => sendDirective(core, tx, req));
}

/** The message and entry of a directive, as of `now` with the recipient `snapshot`. */
function directiveDraft(core: HubCore, req: DirectiveRequest, to: EntryTarget, now: number, snapshot: Reachability): Draft {
  const from = `human:${core.account.id}`;
  const m: NewMessage = {
    id: newId('msg'),
    intent: 'directive',
    from_addr: from,
    from_agent: null,
    reply_session: null,
    to_addr: req.to,
    to_agent: to.agentId,
    to_session: to.sessionId,
    text: req.text,
    in_reply_to: null,
    created_at: now,
    destination: destination(req.to, snapshot),
    idempotency_key: null,
    request_hash: null,
  };
  // thread_id (a common field, MA2H §7) carries the directive's message id: the msg_… that the
  // human's `hub directive` printed is then on the agent's line too, so the two sides can be matched.
  const entry: DirectiveEntry = { id: newId('ent'), kind: 'directive', from, to: req.to, created_at: iso(now), text: req.text, thread_id: m.id };
  return { m, entry };
}

/** The unit of `POST /v1/directives` (§9): the human writes to an agent or one of its sessions. */
export async function sendDirective(core: HubCore, tx: Tx, req: DirectiveRequest): Promise<Answer<MessageRow>> {
  const to = await resolveRecipient(core, tx, req.to);
  if (!to.ok) return to;
  const target = { agentId: to.value.agentId, sessionId: to.value.session?.id ?? null };
  const { m, entry } = directiveDraft(core, req, target, tx.now, to.value.snapshot);
  return good(await insertDelivered(tx, m, entry, target));
}

/** The sender or recipient may read a message; the human reads the directives it sent. Anyone else: 404. */
export async function visibleMessage(q: Sql, caller: Caller, id: string): Promise<Answer<MessageRow>> {
  const m = await messageById(q, id);
  const visible = m !== null && (caller.kind === 'human' ? m.from_agent === null : m.from_agent === caller.agentId || m.to_agent === caller.agentId);
  return visible ? good(m) : bad(404, 'message_not_found', `no message ${id} that this token may read`);
}

export interface Page {
  rows: MessageRow[];
  next: string | null;
}

const encodeCursor = (seq: number): string => Buffer.from(`seq:${seq}`, 'utf8').toString('base64url');

function decodeCursor(c: string): number | null {
  const m = /^seq:(\d+)$/.exec(Buffer.from(c, 'base64url').toString('utf8'));
  return m ? Number(m[1]) : null;
}

/** `GET /v1/messages` (§8, §12): newest first, opaque `before` cursor, default direction `sent`. */
export async function listMessages(q: Sql, caller: Caller, direction: 'sent' | 'received', limit: number, before: string | null): Promise<Answer<Page>> {
  let beforeSeq = Number.MAX_SAFE_INTEGER;
  if (before !== null) {
    const seq = decodeCursor(before);
    if (seq === null)
      return bad(400, 'invalid_request', `before=${before.slice(0, 40)} is not a cursor this Hub issued; pass the "next" value of a previous page`);
    beforeSeq = seq;
  }
  let rows: MessageRow[];
  if (caller.kind === 'human') {
    rows =
      direction === 'sent'
        ? await q.all<MessageRow>('SELECT * FROM messages WHERE from_agent IS NULL AND seq < ? ORDER BY seq DESC LIMIT ?', beforeSeq, limit + 1)
        : [];
  } else {
    const column = direction === 'sent' ? 'from_agent' : 'to_agent';
    rows = await q.all<MessageRow>(`SELECT * FROM messages WHERE ${column} = ? AND seq < ? ORDER BY seq DESC LIMIT ?`, caller.agentId, beforeSeq, limit + 1);
  }
  const more = rows.length > limit;
  const page = rows.slice(0, limit);
  return good({ rows: page, next: more && page.length > 0 ? encodeCursor(page[page.length - 1]!.seq) : null });
}
