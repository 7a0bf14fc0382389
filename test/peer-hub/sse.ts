import type { ServerResponse } from 'node:http';
import type { Json } from './canonical.js';
import type { JsonStyle, SseStyle } from './knobs.js';
import { emit } from './wire.js';

/** Piece sizes for split writes: small and uneven, so cuts land inside multi-byte characters. */
const PIECES = [1, 2, 3, 5, 7, 11, 4, 6];

const isContinuationByte = (b: number | undefined): boolean => b !== undefined && (b & 0xc0) === 0x80;

/**
 * One SSE response. Writes are queued so events never interleave; every framing choice is
 * one that MA2H §5 obliges a client to accept: CRLF/CR/LF line ends, a BOM, comments,
 * `id:`/`retry:` fields, JSON spread over several `data:` lines, chunk boundaries inside
 * a character.
 */
export class SseWriter {
  private chain: Promise<void> = Promise.resolve();
  private started = false;
  private eventNo = 0;
  private piece = 0;

  constructor(
    private readonly res: ServerResponse,
    private readonly sse: () => SseStyle,
    private readonly json: () => JsonStyle,
  ) {}

  get open(): boolean {
    return !this.res.destroyed && !this.res.writableEnded;
  }

  event(name: string, data: Json): Promise<void> {
    const style = this.sse();
    this.eventNo += 1;
    const lines: string[] = [];
    if (style.comments) lines.push(`: peer hub event ${this.eventNo} follows`);
    if (style.idAndRetry) {
      lines.push(`id: peer-${this.eventNo}`);
      if (this.eventNo === 1) lines.push('retry: 2500');
    }
    const text = emit(data, this.json(), style.multiLineData);
    const dataLines = text.split('\n').map((line, i) => (i % 2 === 0 ? `data:${line}` : `data: ${line}`));
    // An empty data line adds a newline to the data: JSON whitespace between the first two tokens.
    if (style.multiLineData && dataLines.length > 1) dataLines.splice(1, 0, 'data:');
    // Field order inside an event is free, and the space after the colon is optional.
    const eventLine = this.eventNo % 2 === 0 ? `event:${name}` : `event: ${name}`;
    if (style.multiLineData) lines.push(...dataLines, eventLine);
    else lines.push(eventLine, ...dataLines);
    return this.send(lines.join(style.lineEnd) + style.lineEnd + style.lineEnd);
  }

  comment(text: string): Promise<void> {
    return this.send(`: ${text}${this.sse().lineEnd}`);
  }

  /** Finish the response once everything queued before it is written. */
  end(): Promise<void> {
    this.chain = this.chain.then(() => {
      if (this.open) this.res.end();
    });
    return this.chain;
  }

  private send(text: string): Promise<void> {
    const style = this.sse();
    const bom = !this.started && style.bom ? '\ufeff' : '';
    this.started = true;
    const bytes = Buffer.from(bom + text, 'utf8');
    this.chain = this.chain.then(() => (style.splitChunks ? this.writeSplit(bytes) : this.write(bytes)));
    return this.chain;
  }

  private async writeSplit(bytes: Buffer): Promise<void> {
    let at = 0;
    while (at < bytes.length && this.open) {
      const size = PIECES[this.piece++ % PIECES.length]!;
      const end = Math.min(bytes.length, at + size);
      await this.write(bytes.subarray(at, end));
      // A cut inside a character gets a moment on its own so it reaches the client as its own read.
      if (isContinuationByte(bytes[end])) await new Promise((r) => setTimeout(r, 2));
      at = end;
    }
  }

  private write(bytes: Buffer): Promise<void> {
    if (!this.open) return Promise.resolve();
    return new Promise((resolve) => this.res.write(bytes, () => resolve()));
  }
}
