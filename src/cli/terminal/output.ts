import { ForwardingOutput } from '../forwarding-output.js';
import type { ProcessOutput } from '../io.js';
import type { TerminalFacts } from './detect.js';
import { highlightLine } from './highlight.js';
import type { StatusLine } from './status-line.js';
import { wrapText } from './wrap.js';

/**
 * A stream of this process that reaches a terminal (or was told to colour): it sits under the
 * escaping layer (EscapingOutput), so it sees text already escaped and adds the only escape
 * sequences that reach the terminal — colour and the status line's erase. In a pipe it is not
 * used at all, which keeps piped bytes exactly what they were.
 */
export class TerminalOutput extends ForwardingOutput {
  constructor(
    inner: ProcessOutput,
    private readonly facts: TerminalFacts,
    private readonly opts: { wrap: boolean; status: StatusLine | null },
  ) {
    super(inner);
  }

  write(text: string, cb?: (err?: Error | null) => void): boolean {
    let out = text;
    if (this.opts.wrap && this.facts.columns !== null) out = wrapText(out, this.facts.columns);
    if (this.facts.color) out = out.split('\n').map(highlightLine).join('\n');
    const status = this.opts.status;
    status?.suspend();
    const ok = this.inner.write(out, cb);
    status?.resume(out.endsWith('\n'));
    return ok;
  }
}
