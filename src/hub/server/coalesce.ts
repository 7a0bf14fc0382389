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
