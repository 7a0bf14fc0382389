/**
 * SIGINT and SIGTERM ask the reader to stop after the record in flight (exit 130/143).
 * Other signals keep the OS default, so the shell sees 128 + N.
 */

export type HandledSignal = 'SIGINT' | 'SIGTERM';

export interface SignalSource {
  on(signal: HandledSignal, handler: () => void): void;
  off(signal: HandledSignal, handler: () => void): void;
}

/**
 * The process's own signals, for a reader whose process ends with its run (the bridge, `inbox
 * watch`). `off` leaves the handler in place until exit: a displacing reader's SIGTERM can land
 * after this one already saw the displacement in reader.json and finished, while it prints its
 * stop line and epilogue, and without a handler Node's default would kill it there, turning a
 * clean exit 0 into death by SIGTERM (seen in CI as exit code null).
 */
export const processSignals: SignalSource = {
  on: (s, h) => void process.on(s, h),
  off: () => undefined,
};

export class StopRequest {
  signal: HandledSignal | null = null;
  private readonly listeners = new Set<() => void>();
  private readonly handlers: [HandledSignal, () => void][];

  constructor(private readonly source: SignalSource) {
    this.handlers = (['SIGINT', 'SIGTERM'] as const).map((s) => [s, () => this.request(s)]);
    for (const [s, h] of this.handlers) source.on(s, h);
  }

  private request(s: HandledSignal): void {
    if (this.signal !== null) return;
    this.signal = s;
    for (const l of this.listeners) l();
  }

  readonly requested = (): boolean => this.signal !== null;

  /** Call `fn` once a stop is requested (at once if it already was). Returns a disposer. */
  onStop(fn: () => void): () => void {
    if (this.signal !== null) {
      fn();
      return () => undefined;
    }
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  dispose(): void {
    for (const [s, h] of this.handlers) this.source.off(s, h);
    this.listeners.clear();
  }
}
