import type { Message, MessageState, PriorState, ReceiptEntry } from '../contract/index.js';
import { formatAddress } from '../contract/index.js';
import { insertEntry } from './entries.js';
import { iso, newId } from './ids.js';
import type { Sql, Tx } from './sql.js';

/** A message row: the sender's view of one send, directive or response and its delivery track. */
export interface MessageRow {
  seq: number;
  id: string;
  intent: Message['intent'];
  from_addr: string;
  /** null for a directive (from the human). */
  from_agent: string | null;
  /** The sender's session: where responses and receipts go while it is active. */
  reply_session: string | null;
  to_addr: string;
  to_agent: string;
  to_session: string | null;
  text: string;
  in_reply_to: string | null;
  created_at: number;
  state: MessageState;
  prior: PriorState | null;
  track: string;
  destination: string;
  response_id: string | null;
  response_text: string | null;
  response_at: number | null;
  idempotency_key: string | null;
  request_hash: string | null;
}

export type EndReason = 'session_lapsed' | 'session_closed' | 'session_closed_by_operator' | 'message_ttl';

/** The message, row-locked when read inside a unit that moves its track (racing acks on two instances queue up). */
export const messageById = (q: Sql, id: string, lock = false): Promise<MessageRow | null> =>
  q.get<MessageRow>(`SELECT * FROM messages WHERE id = ?${lock ? ' FOR UPDATE' : ''}`, id);

export function messageView(m: MessageRow): Message {
  return {
    id: m.id,
    from: m.from_addr,
    to: m.to_addr,
    intent: m.intent,
    text: m.text,
    created_at: iso(m.created_at),
    state: m.state,
    prior: m.prior,
    track: JSON.parse(m.track) as Message['track'],
    destination: JSON.parse(m.destination) as Message['destination'],
    response: m.response_id !== null ? { message_id: m.response_id, text: m.response_text ?? '', at: iso(m.response_at ?? m.created_at) } : null,
    in_reply_to: m.in_reply_to,
    idempotent_replay: false,
  };
}

/** The wire form: optional fields absent rather than null, and no replay flag unless replayed. */
export function messageJson(m: MessageRow, replay = false): Record<string, unknown> {
  const v = messageView(m);
  const out: Record<string, unknown> = {
    id: v.id,
    from: v.from,
    to: v.to,
    intent: v.intent,
    text: v.text,
    created_at: v.created_at,
    state: v.state,
    track: v.track,
    destination: v.destination,
  };
  if (v.prior !== null) out.prior = v.prior;
  if (v.response !== null) out.response = v.response;
  if (v.in_reply_to !== null) out.in_reply_to = v.in_reply_to;
  if (replay) out.idempotent_replay = true;
  return out;
}

const TERMINAL: ReadonlySet<MessageState> = new Set(['acknowledged', 'bounced', 'expired']);
export const isTerminal = (s: MessageState): boolean => TERMINAL.has(s);

async function advance(tx: Tx, m: MessageRow, steps: MessageState[], prior: PriorState | null): Promise<MessageRow> {
  const track = JSON.parse(m.track) as Message['track'];
  for (const state of steps) track.push({ state, at: iso(tx.now) });
  const state = steps[steps.length - 1]!;
  await tx.run('UPDATE messages SET state = ?, prior = ?, track = ? WHERE id = ?', state, prior, JSON.stringify(track), m.id);
  tx.wake('message', m.id);
  return { ...m, state, prior, track: JSON.stringify(track) };
}

/** A consumer holds the entry durably: queued → delivered. */
export async function markDelivered(tx: Tx, messageId: string): Promise<void> {
  const m = await messageById(tx, messageId, true);
  if (m && m.state === 'queued') await advance(tx, m, ['delivered'], null);
}

/** A reader passed it: → acknowledged (through delivered), and the sender gets a receipt. */
export async function markAcknowledged(tx: Tx, messageId: string): Promise<void> {
  const m = await messageById(tx, messageId, true);
  if (!m || isTerminal(m.state)) return;
  const done = await advance(tx, m, m.state === 'queued' ? ['delivered', 'acknowledged'] : ['acknowledged'], null);
  await sendReceipt(tx, done, 'acknowledged', null, null);
}

/** It will never be read at its address: bounced (a session ended) or expired (TTL), with how far it got. */
export async function markUndeliverable(tx: Tx, messageId: string, reason: EndReason): Promise<void> {
  const m = await messageById(tx, messageId, true);
  if (!m || isTerminal(m.state)) return;
  const prior: PriorState = m.state === 'delivered' ? 'delivered' : 'queued';
  const done = await advance(tx, m, [reason === 'message_ttl' ? 'expired' : 'bounced'], prior);
  await sendReceipt(tx, done, done.state === 'expired' ? 'expired' : 'bounced', prior, reason);
}

/**
 * Where replies to a sender go: its session while that is active, else its principal mailbox (§12).
 * The session's row is share-locked until the unit commits, as a send's recipient session is
 * (messages.ts SESSION_GUARD): an end of it waits for the reply, which it then bounces or moves.
 */
export async function replyTarget(q: Sql, agentId: string, sessionId: string | null): Promise<{ agentId: string; sessionId: string | null }> {
  if (sessionId === null) return { agentId, sessionId: null };
  const row = await q.get<{ state: string }>('SELECT state FROM sessions WHERE id = ? AND agent_id = ? FOR KEY SHARE', sessionId, agentId);
  return { agentId, sessionId: row?.state === 'active' ? sessionId : null };
}

/** A terminal state tells the sender (§8, §12); directives get none, since humans have no mailbox. */
async function sendReceipt(tx: Tx, m: MessageRow, status: ReceiptEntry['status'], prior: PriorState | null, reason: EndReason | null): Promise<void> {
  if (m.from_agent === null) return;
  const to = await replyTarget(tx, m.from_agent, m.reply_session);
  const entry: ReceiptEntry = {
    id: newId('ent'),
    kind: 'receipt',
    from: m.to_addr,
    to: formatAddress(to.agentId, to.sessionId),
    created_at: iso(tx.now),
    message_id: m.id,
    status,
  };
  if (prior !== null) entry.prior = prior;
  if (reason !== null) entry.reason = reason;
  await insertEntry(tx, entry, to, null);
}
