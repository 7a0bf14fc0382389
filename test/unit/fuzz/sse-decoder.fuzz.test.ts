import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SseDecoder, type SseItem } from '../../../src/hub/client/sse-decoder.js';
import { fuzzParameters } from '../../helpers/fuzz.js';

/**
 * The SSE decoder and stream framing under arbitrary input: never a throw, only the
 * documented outcomes — the events that were sent, in order; or a failure naming
 * invalid UTF-8, a stream ended inside a character, or an event over the size cap.
 */

const DOCUMENTED_FAILURES = [
  /^the event stream is not valid UTF-8$/,
  /^the event stream ended inside a UTF-8 character$/,
  /^an event was larger than the client accepts/,
];

/** Text a data line may carry: anything but CR and LF (which end lines), U+2028/U+2029 and astral characters included. */
const lineText = fc
  .string({
    unit: fc.oneof(fc.constantFrom('\u2028', '\u2029', '\ufeff', ':', ' ', 'é', '😀', '\u0000'), fc.string({ unit: 'binary', minLength: 1, maxLength: 1 })),
  })
  .map((s) => s.replace(/[\r\n]/g, ''));

const event = fc.record({
  event: fc.option(fc.constantFrom('open', 'entries', 'reconnect', 'closed', 'x-future'), { nil: null }),
  lines: fc.array(lineText, { minLength: 1, maxLength: 4 }),
});
const eol = fc.constantFrom('\n', '\r', '\r\n');

/** Split bytes at arbitrary points (every byte may be its own chunk: a UTF-8 character split across chunks). */
const chunked = (bytes: Uint8Array, cuts: number[]): Uint8Array[] => {
  const at = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  const out: Uint8Array[] = [];
  let from = 0;
  for (const c of [...at, bytes.length]) {
    out.push(bytes.subarray(from, c));
    from = c;
  }
  return out;
};

function decodeAll(chunks: Uint8Array[], max?: number): { items: SseItem[]; failure: string | null } {
  const d = new SseDecoder(max);
  const items: SseItem[] = [];
  for (const c of chunks) {
    const r = d.feed(c);
    if (!r.ok) return { items, failure: r.reason };
    items.push(...r.value);
  }
  const r = d.end();
  if (!r.ok) return { items, failure: r.reason };
  items.push(...r.value);
  return { items, failure: null };
}

const expectDocumented = (failure: string | null) => {
  if (failure !== null)
    expect(
      DOCUMENTED_FAILURES.some((re) => re.test(failure)),
      failure,
    ).toBe(true);
};

describe('SSE decoder (fuzzed)', () => {
  it('any chunking, any CR/LF/CRLF mix, a leading BOM or not: exactly the events sent, in order', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(event, eol, eol), { maxLength: 6 }), fc.boolean(), fc.array(fc.nat(), { maxLength: 12 }), (events, bom, cuts) => {
        let text = bom ? '\ufeff' : '';
        for (const [e, lineEnd, blank] of events) {
          if (e.event !== null) text += `event: ${e.event}${lineEnd}`;
          for (const l of e.lines) text += `data: ${l}${lineEnd}`;
          // After a bare CR an LF would complete a CRLF, not make a blank line: such a Hub writes CRLF or CR there.
          text += lineEnd === '\r' && blank === '\n' ? '\r\n' : blank;
        }
        const { items, failure } = decodeAll(chunked(new TextEncoder().encode(text), cuts));
        expect(failure).toBeNull();
        const got = items.filter((i) => i.kind === 'event');
        expect(got).toEqual(events.map(([e]) => ({ kind: 'event', event: e.event, data: e.lines.join('\n') })));
      }),
      fuzzParameters(0x55e1, 300),
    );
  });

  it('arbitrary bytes in arbitrary chunks: never a throw, only events or a documented failure; never U+FFFD that was not sent', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 600 }), fc.array(fc.nat(), { maxLength: 10 }), (bytes, cuts) => {
        const { items, failure } = decodeAll(chunked(bytes, cuts), 256);
        expectDocumented(failure);
        const sentReplacement = Buffer.from(bytes).includes(Buffer.from('\ufffd'));
        if (!sentReplacement) for (const i of items) expect(i.kind === 'event' ? i.data : i.text).not.toContain('\ufffd');
      }),
      fuzzParameters(0x55e2, 400),
    );
  });

  it('invalid UTF-8 anywhere in a valid stream is refused, never decoded into an event', () => {
    const invalid = fc.constantFrom([0xff], [0xc0, 0x80], [0xed, 0xa0, 0x80], [0xe2, 0x82], [0xf4, 0x90, 0x80, 0x80], [0x80]);
    fc.assert(
      fc.property(fc.array(lineText, { minLength: 1, maxLength: 3 }), invalid, fc.nat(), fc.array(fc.nat(), { maxLength: 8 }), (lines, bad, where, cuts) => {
        const good = new TextEncoder().encode(lines.map((l) => `event: entries\ndata: ${l}\n\n`).join(''));
        const at = where % (good.length + 1);
        const bytes = Uint8Array.from([...good.subarray(0, at), ...bad, ...good.subarray(at)]);
        const { items, failure } = decodeAll(chunked(bytes, cuts));
        expect(failure).toMatch(/not valid UTF-8|ended inside a UTF-8 character/);
        for (const i of items) expect(i.kind === 'event' ? i.data : i.text).not.toContain('\ufffd');
      }),
      fuzzParameters(0x55e3, 300),
    );
  });

  it('an endless line (no line end, ever) past the cap is refused with the size failure, fed in any chunks', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 64 }), fc.integer({ min: 2, max: 8 }), fc.constantFrom('data: ', ': ', 'event: ', ''), (cap, factor, prefix) => {
        const d = new SseDecoder(cap * 16);
        const piece = new TextEncoder().encode('x'.repeat(cap));
        let failure: string | null = null;
        const first = d.feed(new TextEncoder().encode(prefix));
        if (!first.ok) failure = first.reason;
        for (let i = 0; i < factor * 16 + 16 && failure === null; i += 1) {
          const r = d.feed(piece);
          if (!r.ok) failure = r.reason;
          else expect(r.value).toEqual([]);
        }
        expect(failure).toMatch(/larger than the client accepts/);
      }),
      fuzzParameters(0x55e4, 100),
    );
  });
});
