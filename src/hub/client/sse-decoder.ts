import { createParser, type EventSourceParser, type ParseError } from 'eventsource-parser';
import { maxPageAcceptBytes } from '../contract/index.js';
import { fail, ok, type Result } from '../../core/index.js';

/**
 * The largest single SSE event we buffer, in characters: any page the contract allows, which
 * always includes one maximal entry (contract/limits.ts). A UTF-8 byte bound is also a bound on
 * UTF-16 characters (no character takes more units than bytes). Past it the stream is refused
 * (the entries stay unacknowledged at the Hub, nothing is lost).
 */
export const maxSseEventChars = (): number => maxPageAcceptBytes();

export type SseItem = { kind: 'event'; event: string | null; data: string } | { kind: 'comment'; text: string };

/**
 * Bytes in, SSE events out. A streaming, fatal UTF-8 decoder sits in front of the parser:
 * a multi-byte character split across chunks is reassembled, a leading BOM is dropped
 * by the decoder (so it cannot eat the first field name), and bytes that are not UTF-8
 * are a failure rather than silently replaced text inside a signed entry. Line ends may
 * be CRLF, CR or LF; U+2028/U+2029 are ordinary characters here.
 */
export class SseDecoder {
  private readonly decoder = new TextDecoder('utf-8', { fatal: true });
  private readonly parser: EventSourceParser;
  private items: SseItem[] = [];
  private overflow: string | null = null;
  /** The last text fed ended with CR: an LF opening the next is the same line end (CRLF split across chunks). */
  private afterCr = false;

  constructor(maxEventChars = maxSseEventChars()) {
    this.parser = createParser({
      maxBufferSize: maxEventChars,
      onEvent: (e) => this.items.push({ kind: 'event', event: e.event ?? null, data: e.data }),
      onComment: (text) => this.items.push({ kind: 'comment', text }),
      onError: (e: ParseError) => {
        // Unknown fields and bad `retry` values are ignored, as the SSE spec says.
        if (e.type === 'max-buffer-size-exceeded') this.overflow = e.message;
      },
    });
  }

  /** Feed one chunk; returns the items it completed, in order. */
  feed(chunk: Uint8Array): Result<SseItem[]> {
    let text: string;
    try {
      text = this.decoder.decode(chunk, { stream: true });
    } catch {
      return fail('the event stream is not valid UTF-8');
    }
    return this.push(text);
  }

  /** The stream ended: flush the decoder. An event without its blank line is not an event. */
  end(): Result<SseItem[]> {
    let text: string;
    try {
      text = this.decoder.decode();
    } catch {
      return fail('the event stream ended inside a UTF-8 character');
    }
    return this.push(text);
  }

  private push(text: string): Result<SseItem[]> {
    if (text.length > 0) {
      const normalised = this.lineEnds(text);
      if (normalised.length > 0) this.parser.feed(normalised);
    }
    const items = this.items;
    this.items = [];
    if (this.overflow !== null) {
      const reason = this.overflow;
      this.overflow = null;
      // A parser past maxBufferSize throws on every later feed until reset.
      this.parser.reset();
      return fail(`an event was larger than the client accepts (${reason})`);
    }
    return ok(items);
  }

  /**
   * Every line end as LF before the parser sees it. A CR ending a chunk is a line end at
   * once: left to the parser it waits for a possible LF, so an event framed with bare CRs
   * was held until the Hub's next byte, and a `reconnect` or `closed` ending the stream
   * that way was never dispatched (found by test/unit/fuzz/sse-decoder.fuzz.test.ts).
   */
  private lineEnds(text: string): string {
    const rest = this.afterCr && text.charCodeAt(0) === 0x0a ? text.slice(1) : text;
    this.afterCr = rest.endsWith('\r');
    return rest.replace(/\r\n?/g, '\n');
  }
}
