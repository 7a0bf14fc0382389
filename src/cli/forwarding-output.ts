import type { ProcessOutput } from './io.js';

/** An output that changes what is written and hands everything else to the stream it wraps. */
export abstract class ForwardingOutput implements ProcessOutput {
  constructor(protected readonly inner: ProcessOutput) {}

  abstract write(text: string, cb?: (err?: Error | null) => void): boolean;

  get writableLength(): number {
    return this.inner.writableLength;
  }

  get errored(): Error | null {
    return this.inner.errored;
  }

  on(event: 'error', listener: (err: Error) => void): this {
    this.inner.on(event, listener);
    return this;
  }

  once(event: 'drain', listener: () => void): this {
    this.inner.once(event, listener);
    return this;
  }
}
