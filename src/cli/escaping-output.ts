import { escapeUnsafeLines } from '../util/escape.js';
import { writeFlushedNow } from '../util/output.js';
import { ForwardingOutput } from './forwarding-output.js';

/**
 * stdout and stderr as every command sees them: each write passes through
 * escapeUnsafeLines, so no path — a Hub's error code or message, a non-MA2H error body, a
 * reconnect reason, a holder's host name relayed from consumer.json, a session name in a
 * fleet listing, a warning quoting a config value — can put an escape sequence, a C1
 * control or a bidi override on the terminal. The text's own line breaks and tabs are
 * kept; a one-line message escapes what it embeds where it is built (program.ts).
 */
export class EscapingOutput extends ForwardingOutput {
  write(text: string, cb?: (err?: Error | null) => void): boolean {
    return this.inner.write(escapeUnsafeLines(text), cb);
  }

  writeNow(text: string): Promise<void> | null {
    return writeFlushedNow(this.inner, escapeUnsafeLines(text));
  }
}
