import { appendFileSync } from 'node:fs';

/**
 * The push-latency trace (bench/bridge-latency.mjs --trace): with OH_HAI_TRACE naming a file,
 * the Hub, the background connection and the reader each append one line per hop a message
 * passes — `<monotonic ns> <hop> <message id>` — so a bench can split send → printed line
 * into its hops. CLOCK_MONOTONIC is one clock for every process on the machine. Off by
 * default, and then a call site costs one comparison: each is written `if (TRACE) hop(…)`.
 * Never a secret in a line: hop names and message ids only. O_APPEND keeps the lines of
 * several processes whole.
 */
export const TRACE: string | null = process.env.OH_HAI_TRACE || null;

/** Record that `messageId` passed `hop` now (or at `at`, a process.hrtime.bigint() taken earlier). */
export function hop(name: string, messageId: unknown, at: bigint = process.hrtime.bigint()): void {
  if (TRACE === null || typeof messageId !== 'string') return;
  try {
    appendFileSync(TRACE, `${at} ${name} ${messageId}\n`);
  } catch {
    // A trace that cannot be written changes nothing the product does.
  }
}

/** The message id a raw delivery names, if it names one (the trace's key). */
export const deliveredMessageId = (raw: unknown): unknown =>
  typeof raw === 'object' && raw !== null ? ((raw as { entry?: { message_id?: unknown } }).entry ?? {}).message_id : undefined;
