/** Calls `fn` every `ms` until the returned function is called (setInterval, unref'd, in production). */
export interface Ticker {
  every(ms: number, fn: () => void): () => void;
}

export const intervalTicker: Ticker = {
  every(ms, fn) {
    const t = setInterval(fn, ms);
    // The status line never keeps a finished run alive.
    t.unref();
    return () => clearInterval(t);
  },
};

/** How a status line reaches the terminal: raw, after the escaping layer (its bytes are ours). */
export interface RawWriter {
  write(text: string): unknown;
}

/** Carriage return, then erase to the end of the line. */
const ERASE = '\r\x1b[K';

/**
 * One live line at the bottom of the terminal (stderr), redrawn every second: what a waiting
 * command is doing and how long it will still wait (docs/terminal.md). It exists only when
 * stderr is a terminal, and a command starts it only for human output (never under --raw or
 * --json), so nothing of it reaches a pipe or a log. Every write of the process to the
 * terminal goes through suspend()/resume() (TerminalOutput): the line is erased first, so a
 * record printed while waiting is never mixed with it, and drawn again under what was printed.
 */
export class StatusLine {
  private render: (() => string) | null = null;
  private shown = false;
  private cancel: (() => void) | null = null;

  constructor(
    private readonly out: RawWriter,
    private readonly ticker: Ticker,
    private readonly columns: () => number | null,
  ) {}

  /** Show `render()` now and redraw it every `everyMs` until stop(). */
  start(render: () => string, everyMs = 1000): void {
    this.stop();
    this.render = render;
    this.draw();
    this.cancel = this.ticker.every(everyMs, () => this.draw());
  }

  /** Erase the line for good (before the run's last lines). */
  stop(): void {
    this.cancel?.();
    this.cancel = null;
    this.render = null;
    this.erase();
  }

  /** Before any other write to the terminal. */
  suspend(): void {
    this.erase();
  }

  /** After it: drawn again only below a whole line (a prompt waiting on its line keeps its line). */
  resume(endsLine: boolean): void {
    if (endsLine) this.draw();
  }

  get active(): boolean {
    return this.render !== null;
  }

  private draw(): void {
    if (this.render === null) return;
    // One row only: a line the terminal wraps could not be erased with a carriage return.
    const width = this.columns();
    let text = this.render();
    if (width !== null && text.length > width - 1) text = text.slice(0, Math.max(0, width - 2)) + '…';
    this.out.write(ERASE + text);
    this.shown = true;
  }

  private erase(): void {
    if (!this.shown) return;
    this.out.write(ERASE);
    this.shown = false;
  }
}
