import { EventEmitter } from 'node:events';
import { writeSync } from 'node:fs';
import { writeFlushed } from '../util/output.js';

/** How long a burst of writes may go without a turn of the event loop (see callBack). */
const TURN_NS = 1_000_000n;

const WRITTEN = Symbol('written');

/**
 * stdout or stderr written with write(2) on the descriptor rather than through Node's stream
 * for it. Creating process.stdout and process.stderr on pipes loads `net` and half of
 * `stream` and costs a run ~3 ms, a seventh of a bare `node` start (docs/performance.md); the
 * bridge, re-run after every exit, uses this instead.
 *
 * A write returns once the kernel has the bytes, which is what the reader's "flushed" means
 * anyway (print, flush, then move the cursor). On a blocking descriptor, the usual case, a
 * full pipe blocks the process until its reader drains it, as a record in flight would have
 * waited (a SIGTERM meanwhile is handled once the write returns). A descriptor a parent left non-blocking answers EAGAIN instead: from then on
 * every write goes through Node's stream, in order, which waits for the pipe without blocking.
 * A failed write (EPIPE: nobody reads) fails its callback and emits 'error', as the stream does.
 */
export class FdOutput extends EventEmitter {
  private stream: NodeJS.WriteStream | null = null;
  private failure: Error | null = null;
  private lastTurn = process.hrtime.bigint();

  constructor(
    private readonly fd: number,
    private readonly openStream: () => NodeJS.WriteStream,
  ) {
    super();
  }

  write(text: string, cb?: (err?: Error | null) => void): boolean {
    if (this.stream) return this.stream.write(text, cb);
    const r = this.writeDirect(text);
    if (r === WRITTEN) {
      if (cb) this.callBack(cb);
      return true;
    }
    if (r instanceof Error) {
      this.failure = r;
      setImmediate(() => {
        cb?.(r);
        this.emit('error', r);
      });
      return false;
    }
    return this.toStream().write(r, cb);
  }

  /** Output.writeNow: null once write(2) has taken every byte and no turn of the event loop is due (see callBack). */
  writeNow(text: string): Promise<void> | null {
    if (this.stream) return writeFlushed(this.stream, text);
    const r = this.writeDirect(text);
    if (r === WRITTEN) return this.turnDue() ? new Promise((resolve) => setImmediate(resolve)) : null;
    if (r instanceof Error) {
      this.failure = r;
      setImmediate(() => this.emit('error', r));
      return Promise.reject(r);
    }
    const stream = this.toStream();
    return new Promise((resolve, reject) => stream.write(r, (err?: Error | null) => (err ? reject(err) : resolve())));
  }

  /** write(2) until every byte is taken: WRITTEN, the bytes left when the descriptor answered EAGAIN, or the failure. */
  private writeDirect(text: string): typeof WRITTEN | Buffer | Error {
    if (text.length === 0) return WRITTEN;
    let bytes: Buffer | null = null;
    let done = 0;
    try {
      // The string itself first: a line nearly always goes in one write(2), and then it needs
      // no Buffer of its own (allocated and copied per printed record). Bytes a short write
      // left are written from a Buffer, by byte offset.
      done = writeSync(this.fd, text, null, 'utf8');
      if (done === Buffer.byteLength(text, 'utf8')) return WRITTEN;
      bytes = Buffer.from(text, 'utf8');
      while (done < bytes.length) done += writeSync(this.fd, bytes, done);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      return code === 'EAGAIN' || code === 'EWOULDBLOCK' ? (bytes ?? Buffer.from(text, 'utf8')).subarray(done) : (e as Error);
    }
    return WRITTEN;
  }

  /**
   * A reader printing a burst awaits each callback, and only a turn of the event loop lets a
   * SIGTERM or SIGINT (or a heartbeat) in between two records; a turn per record would cost
   * more than the write. So a callback waits for the next turn once a millisecond has passed
   * since the last one, and is otherwise called straight after this write.
   */
  private callBack(cb: (err?: Error | null) => void): void {
    if (this.turnDue()) setImmediate(cb, null);
    else process.nextTick(cb, null);
  }

  /** A millisecond has passed since the last turn this output gave the event loop: it gives one now. */
  private turnDue(): boolean {
    const now = process.hrtime.bigint();
    if (now - this.lastTurn < TURN_NS) return false;
    this.lastTurn = now;
    return true;
  }

  /** Bytes accepted but not yet written: only the stream, once in use, ever holds any. */
  get writableLength(): number {
    return this.stream?.writableLength ?? 0;
  }

  /** The first write(2) that failed, or the stream's error once writes go through it. */
  get errored(): Error | null {
    return this.failure ?? this.stream?.errored ?? null;
  }

  private toStream(): NodeJS.WriteStream {
    const stream = this.openStream();
    stream.on('error', (e) => this.emit('error', e));
    stream.on('drain', () => this.emit('drain'));
    this.stream = stream;
    return stream;
  }
}
