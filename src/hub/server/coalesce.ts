/**
 * Run `fn` one call at a time: a call made while it runs asks for exactly one more run
 * after it, however many such calls came. A wake-up can then never be lost, nor start a
 * second reader racing the first.
 */
export function coalesced(fn: () => Promise<void>): () => Promise<void> {
  let running = false;
  let again = false;
  return async () => {
    if (running) {
      again = true;
      return;
    }
    running = true;
    try {
      do {
        again = false;
        await fn();
      } while (again);
    } finally {
      running = false;
    }
  };
}

/**
 * At most `permits` callers inside at once; the others wait their turn in arrival order. Stream
 * pages pass through one per Hub, so however many streams have a backlog, part of a database
 * pool always stays free for everyone else's requests.
 */
export class Gate {
  private inside = 0;
  private readonly queue: Array<() => void> = [];

  constructor(private readonly permits: number) {}

  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.inside >= this.permits) await new Promise<void>((resolve) => this.queue.push(resolve));
    else this.inside += 1;
    try {
      return await fn();
    } finally {
      const next = this.queue.shift();
      // The permit passes straight to the next in line; only with nobody waiting is it returned.
      if (next) next();
      else this.inside -= 1;
    }
  }
}
