/**
 * Wait for a condition with a deadline; never a fixed sleep. Polls with a short backoff.
 * Throws with the last observed value so a failure says what was seen.
 */
export async function waitFor<T>(probe: () => T | Promise<T>, opts: { timeoutMs?: number; intervalMs?: number; what?: string } = {}): Promise<NonNullable<T>> {
  const timeoutMs = opts.timeoutMs ?? 20_000;
  const deadline = Date.now() + timeoutMs;
  let interval = opts.intervalMs ?? 10;
  let last: unknown;
  for (;;) {
    try {
      last = await probe();
      if (last) return last as NonNullable<T>;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) {
      const seen = last instanceof Error ? last.message : JSON.stringify(last);
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${opts.what ?? 'condition'}; last seen: ${seen}`);
    }
    await new Promise((r) => setTimeout(r, interval));
    interval = Math.min(interval * 2, 100);
  }
}
