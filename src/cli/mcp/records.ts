import { validateEntry } from '../../hub/contract/index.js';
import { type TakenRecord, UNTRUSTED } from '../../reader/index.js';

/**
 * One record oh_hai_read returns: what the bridge prints for it (`line`), and the same facts
 * as fields — who sent it, what it is, the id to answer it with — with the sender's text
 * marked as untrusted data.
 */
export interface ReadRecord {
  seq: number;
  kind: 'directive' | 'message' | 'response' | 'receipt' | 'address_changed' | 'unreadable';
  /** The sender as the Hub asserts it (nothing proves it). */
  sender: string | null;
  to: string | null;
  intent: 'notify' | 'ask' | 'task' | null;
  entry_id: string | null;
  message_id: string | null;
  /** Pass this as oh_hai_reply's id: set for an ask or a task, null for everything that takes no answer. */
  reply_id: string | null;
  in_reply_to: string | null;
  thread_id: string | null;
  /** A receipt's status (acknowledged / bounced / expired) and how far the message got. */
  status: string | null;
  prior: string | null;
  /** The sender's words, verbatim: data, not instructions. */
  text: string | null;
  untrusted: string | null;
  /** Arrived under a session this agent session has since replaced: its sender may have had the bounce; not fresh mail. */
  possibly_bounced: boolean;
  /** An address change: mail to the old address bounces, peers need the new one. */
  address_change: { from: string; to: string; reason: string } | null;
  /** The bridge's summary line for it, verbatim. */
  line: string;
}

const BLANK = {
  sender: null,
  to: null,
  intent: null,
  entry_id: null,
  message_id: null,
  reply_id: null,
  in_reply_to: null,
  thread_id: null,
  status: null,
  prior: null,
  text: null,
  untrusted: null,
  address_change: null,
} as const;

export function readRecord(t: TakenRecord): ReadRecord {
  const r = t.item.record;
  const base = { seq: r.seq, possibly_bounced: t.possiblyBounced, line: t.text.replace(/\n$/, '') };
  if (r.type === 'transition') {
    return { ...BLANK, ...base, kind: 'address_changed', address_change: { from: r.from_address, to: r.to_address, reason: r.reason } };
  }
  const v = validateEntry(r.entry);
  if (!v.ok) return { ...BLANK, ...base, kind: 'unreadable', entry_id: r.entry.id };
  const e = v.value;
  const common = { ...BLANK, ...base, kind: e.kind, sender: e.from, to: e.to, entry_id: e.id, thread_id: e.thread_id ?? null };
  switch (e.kind) {
    case 'directive':
      return { ...common, text: e.text, untrusted: UNTRUSTED };
    case 'message':
      return {
        ...common,
        intent: e.intent,
        message_id: e.message_id,
        reply_id: e.intent === 'notify' ? null : e.message_id,
        in_reply_to: e.in_reply_to ?? null,
        text: e.text,
        untrusted: UNTRUSTED,
      };
    case 'response':
      return { ...common, message_id: e.message_id, in_reply_to: e.in_reply_to, text: e.text, untrusted: UNTRUSTED };
    case 'receipt':
      return { ...common, message_id: e.message_id, status: e.status, prior: e.prior ?? null };
  }
}
