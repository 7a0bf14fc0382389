/** What a command writes to: process.stdout/stderr, an FdOutput, or a test's PassThrough. */
export interface Output {
  write(text: string, cb?: (err?: Error | null) => void): boolean;
  on(event: 'error', listener: (err: Error) => void): unknown;
}

/** Write and resolve once the bytes have been handed to the OS (for pipes: flushed). */
export function writeFlushed(stream: Output, text: string): Promise<void> {
  return new Promise((resolve, reject) => {
    stream.write(text, (err?: Error | null) => (err ? reject(err) : resolve()));
  });
}
