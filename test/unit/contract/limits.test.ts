import { describe, expect, it } from 'vitest';
import { SseDecoder, maxResponseBytes, maxSseEventChars } from '../../../src/hub/client/index.js';
import {
  MAX_PAGE_BYTES,
  MAX_TEXT_BYTES,
  deliveryWrapperBytes,
  maxDeliveryBytes,
  maxPageAcceptBytes,
  maximalDelivery,
  parseSignature,
  splitDelivery,
  validateEntry,
} from '../../../src/hub/contract/index.js';
import { json, usePeerClient } from '../client/peer.js';

// Issue 18 High 1: 86 texts of 65,536 × U+0001 (~393 KB each once JSON-escaped) made one page
// larger than the client's caps, and the mailbox stuck for good. The caps are derived from the
// contract's limits now: whatever the Hub pages, a page of one maximal entry is always accepted.

const entriesEvent = (messages: unknown[]): string => `event: entries\ndata: ${JSON.stringify({ messages })}\n\n`;

describe('the largest legal delivery, built from the contract limits', () => {
  it('is legal: its entry validates unchanged and its signature parses', () => {
    const d = maximalDelivery();
    const split = splitDelivery(JSON.parse(JSON.stringify(d)));
    expect(split.ok).toBe(true);
    const entry = validateEntry(split.ok ? split.value.entry : null);
    expect(entry.ok, entry.ok ? '' : entry.reason).toBe(true);
    expect(entry.ok && entry.value).toEqual(d.entry);
    expect(parseSignature(d.signature).ok).toBe(true);
  });

  it('takes the worst JSON escape of every byte of text: 6 wire bytes per byte', () => {
    console.log(
      `largest delivery: ${maxDeliveryBytes()} bytes; wrapper + signature ≤ ${deliveryWrapperBytes()} bytes; client page cap ${maxPageAcceptBytes()} bytes`,
    );
    expect(maxDeliveryBytes()).toBeGreaterThan(6 * MAX_TEXT_BYTES);
    expect(maxPageAcceptBytes()).toBeGreaterThanOrEqual(Math.max(MAX_PAGE_BYTES, maxDeliveryBytes()));
    expect(maxSseEventChars()).toBe(maxPageAcceptBytes());
    expect(maxResponseBytes()).toBe(maxPageAcceptBytes());
  });
});

describe('the client accepts any page the contract allows', () => {
  /** Feed in socket-sized chunks (the decoder's cap bounds what it buffers across chunks). */
  const feedChunked = (text: string, chunk = 65_537): { ok: boolean; events: number } => {
    const bytes = Buffer.from(text);
    const decoder = new SseDecoder();
    let events = 0;
    for (let i = 0; i < bytes.length; i += chunk) {
      const r = decoder.feed(bytes.subarray(i, i + chunk));
      if (!r.ok) return { ok: false, events };
      events += r.value.length;
    }
    return { ok: true, events };
  };

  it('decodes an entries event carrying one maximal delivery, whole or split', () => {
    const event = entriesEvent([maximalDelivery()]);
    expect(feedChunked(event, Number.MAX_SAFE_INTEGER)).toEqual({ ok: true, events: 1 });
    expect(feedChunked(event)).toEqual({ ok: true, events: 1 });
    expect(feedChunked(event, 7)).toEqual({ ok: true, events: 1 });
  });

  it('decodes an event of a full page of maximal deliveries, and refuses one larger than any page', () => {
    const perPage = Math.floor(MAX_PAGE_BYTES / maxDeliveryBytes());
    expect(feedChunked(entriesEvent(Array.from({ length: perPage }, maximalDelivery)))).toEqual({ ok: true, events: 1 });
    const past = Math.ceil(maxPageAcceptBytes() / maxDeliveryBytes());
    expect(feedChunked(entriesEvent(Array.from({ length: past }, maximalDelivery))).ok).toBe(false);
  });

  const peerClient = usePeerClient();
  it('reads a drain answer carrying one maximal delivery', async () => {
    const { client } = await peerClient((_req, res) => json(res, 200, { messages: [maximalDelivery()] }), { token: 't' });
    const d = await client.drain({ limit: 100 });
    expect(d.ok, d.ok ? '' : JSON.stringify(d.failure)).toBe(true);
    expect(d.ok && d.value.messages).toHaveLength(1);
  });
});
