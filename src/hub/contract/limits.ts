import { MAX_TEXT_BYTES } from './entry.js';
import { MAX_AGENT_ID_BYTES, MAX_ID_BYTES } from './ids.js';
import { utf8Bytes } from '../../util/shape.js';
import { formatSignature, SIGNATURE_ALG } from './signature.js';
import type { Delivery, MessageEntry } from './types.js';

/**
 * How large a page may be: one SSE `entries` event or one drain answer. A page carries at most
 * MAX_PAGE_BYTES of deliveries, or a single delivery of any legal size, so the largest legal
 * entry always moves (docs/protocol.md, "Byte bounds"). The reference Hub's --page-bytes may
 * not exceed it, and the client accepts every page within it.
 */
export const MAX_PAGE_BYTES = 32 * 1024 * 1024;

/** Room beside the deliveries in a page: the event's framing, `{"messages":[…]}`, a drain's lease view. */
export const PAGE_ENVELOPE_BYTES = 64 * 1024;

/**
 * The largest delivery the contract allows, built from its limits and the worst JSON escape each
 * field admits: every byte of `text` a control character (1 byte of UTF-8 becomes `\u00XX`, 6 on
 * the wire; U+0001 × 65,536 is ~393 KB), every id and address at its byte limit in `"` (1 → 2;
 * ids hold no control characters), the longest instant, jti and t. A message is the kind with the
 * most fields; the unit tests check that this delivery validates.
 */
export function maximalDelivery(): Delivery {
  const id = '"'.repeat(MAX_ID_BYTES);
  const address = `agent:${'"'.repeat(MAX_AGENT_ID_BYTES)}#${id}`;
  const entry: MessageEntry = {
    id,
    kind: 'message',
    from: address,
    to: address,
    created_at: '9999-12-31T23:59:59.999999999+23:59',
    thread_id: id,
    message_id: id,
    intent: 'notify',
    text: '\u0001'.repeat(MAX_TEXT_BYTES),
    in_reply_to: id,
  };
  // t: any unix second before the year 5138; the jti at its longest.
  return { entry, signature: formatSignature({ t: 99_999_999_999, jti: 'j'.repeat(128), alg: SIGNATURE_ALG, v1: '0'.repeat(64) }) };
}

const bytesOf = (v: unknown): number => utf8Bytes(JSON.stringify(v));

/** Measured once, on first use: the bridge's warm path imports the contract but never pages. */
let measured: { delivery: number; wrapper: number } | null = null;
function measure(): { delivery: number; wrapper: number } {
  if (measured === null) {
    const d = maximalDelivery();
    const delivery = bytesOf(d);
    measured = { delivery, wrapper: delivery - bytesOf(d.entry) };
  }
  return measured;
}

/** Wire bytes of the largest legal delivery (`{"entry":…,"signature":"…"}`). */
export const maxDeliveryBytes = (): number => measure().delivery;

/** What a delivery adds to its entry's JSON at most: the wrapper and the longest signature. */
export const deliveryWrapperBytes = (): number => measure().wrapper;

/**
 * The most bytes a client must accept for one page (an SSE event's data or a drain body): a page
 * of MAX_PAGE_BYTES, or of one maximal delivery where that is larger, plus the envelope.
 */
export const maxPageAcceptBytes = (): number => Math.max(MAX_PAGE_BYTES, maxDeliveryBytes()) + PAGE_ENVELOPE_BYTES;
