/** What a command writes to: process.stdout/stderr, an FdOutput, or a test's PassThrough. */
export interface Output {
  write(text: string, cb?: (err?: Error | null) => void): boolean;
  on(event: 'error', listener: (err: Error) => void): unknown;
  /**
   * Write `text` as `writeFlushed` would, but answer null instead of a promise when the OS
   * already has every byte and the event loop is not due a turn. Only an output that writes
   * with write(2) has it (FdOutput): a reader printing a backlog then spends no promise,
   * callback or microtask per record (docs/performance.md).
   */
  writeNow?(text: string): Promise<void> | null;
}

/** Write and resolve once the bytes have been handed to the OS (for pipes: flushed). */
export function writeFlushed(stream: Output, text: string): Promise<void> {
  return new Promise((resolve, reject) => {
    stream.write(text, (err?: Error | null) => (err ? reject(err) : resolve()));
  });
}

/** `writeFlushed`, or null when the output wrote `text` through before returning and nothing needs awaiting (Output.writeNow). */
export function writeFlushedNow(stream: Output, text: string): Promise<void> | null {
  return stream.writeNow ? stream.writeNow(text) : writeFlushed(stream, text);
}
