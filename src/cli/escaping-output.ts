import { escapeUnsafeLines } from '../util/escape.js';
import type { ProcessOutput } from './io.js';

/**
 * stdout and stderr as every command sees them: each write passes through
 * escapeUnsafeLines, so no path — a Hub's error code or message, a non-MA2H error body, a
 * reconnect reason, a holder's host name relayed from consumer.json, a session name in a
 * fleet listing, a warning quoting a config value — can put an escape sequence, a C1
 * control or a bidi override on the terminal. The text's own line breaks and tabs are
 * kept; a one-line message escapes what it embeds where it is built (program.ts).
 */
export class EscapingOutput implements ProcessOutput {
  constructor(private readonly inner: ProcessOutput) {}

  write(text: string, cb?: (err?: Error | null) => void): boolean {
    return this.inner.write(escapeUnsafeLines(text), cb);
  }

  get writableLength(): number {
    return this.inner.writableLength;
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
