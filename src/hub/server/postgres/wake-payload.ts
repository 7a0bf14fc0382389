// The wire form of a wake-up hint between instances: written by the notifier (notifier.ts), read
// by the listener (listener.ts).
import type { WakeTopic } from '../sql.js';
import { hop } from '../../../util/trace.js';

/** The channel every instance LISTENs on; payloads carry ids only. */
export const CHANNEL = 'oh_hai_wake';
/** NOTIFY refuses payloads of 8000 bytes or more. */
const PAYLOAD_BYTES = 7000;

/** Wake-ups as NOTIFY payloads: `<instance> <sent at, ms> topic:key topic:key …`, each under the size cap. */
export function notifyPayloads(instance: string, sentAt: number, wakes: ReadonlyArray<readonly [WakeTopic, string]>): string[] {
  const out: string[] = [];
  const head = `${instance} ${sentAt}`;
  let cur = head;
  for (const item of new Set(wakes.map(([topic, key]) => `${topic}:${key}`))) {
    if (cur.length + 1 + item.length > PAYLOAD_BYTES) {
      out.push(cur);
      cur = head;
    }
    cur += ` ${item}`;
  }
  if (cur !== head) out.push(cur);
  return out;
}

/** Parse a payload from {@link notifyPayloads}; null when it is not one. */
export function parsePayload(payload: string): { instance: string; sentAt: number; wakes: Array<[WakeTopic, string]> } | null {
  const [instance, at, ...items] = payload.split(' ');
  const sentAt = Number(at);
  if (!instance || !Number.isFinite(sentAt)) return null;
  const wakes: Array<[WakeTopic, string]> = [];
  for (const item of items) {
    const m = /^(mail|released|message|session|credentials):(.+)$/.exec(item);
    if (m) wakes.push([m[1] as WakeTopic, m[2]!]);
  }
  return { instance, sentAt, wakes };
}

/**
 * The push trace only: `name` for each mailbox key of `wakes`, at one instant. A hint names
 * mailboxes, not messages: the bench matches each to a push by its recipient's mailbox (the
 * sending Hub's `ev.batched`, this Hub's `ev.heard`), to split the hint between the instances.
 */
export function traceMailboxes(name: string, wakes: ReadonlyArray<readonly [WakeTopic, string]>): void {
  const at = process.hrtime.bigint();
  for (const [topic, key] of wakes) if (topic === 'mail' && key.includes('#')) hop(name, key, at);
}
