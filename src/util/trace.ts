import { openSync, writeSync } from 'node:fs';

/**
 * The push-latency trace (bench/bridge-latency.mjs --trace): with OH_HAI_TRACE naming a file,
 * the Hub, the background connection and the reader each append one line per hop a message
 * passes — `<monotonic ns> <hop> <message id> <process CPU µs>` — so a bench can split send →
 * printed line into its hops, by wall time and, between two hops of one process, by the CPU
 * that process spent (what a loaded machine does not change). CLOCK_MONOTONIC is one clock
 * for every process on the machine. Off by default, and then a call site costs one
 * comparison: each is written `if (TRACE) hop(…)`. Never a secret in a line: hop names and
 * message ids only. O_APPEND keeps the lines of several processes whole.
 */
export const TRACE: string | null = process.env.OH_HAI_TRACE || null;

/**
 * OH_HAI_TRACE_HOPS, a comma-separated list of hop names, limits the trace to those hops (unset:
 * every hop). The bench's untraced runs give the Hub `hub.committed` alone: the instant a send's
 * COMMIT returned, the anchor of "committed → printed", without an append on the push's path.
 */
const ONLY: ReadonlySet<string> | null = TRACE !== null && process.env.OH_HAI_TRACE_HOPS ? new Set(process.env.OH_HAI_TRACE_HOPS.split(',')) : null;

/** A moment of this process: the monotonic clock and the CPU time spent so far (user + system). */
export interface Instant {
  ns: bigint;
  cpuUs: number;
}

export function instant(): Instant {
  const cpu = process.cpuUsage();
  return { ns: process.hrtime.bigint(), cpuUs: cpu.user + cpu.system };
}

/**
 * The trace file, opened for append when this module loads (O_APPEND keeps the lines of several
 * processes whole). Not on the first hop: a reader's first hop is its wake, whose woken → read
 * figure then held the open (~0.1–0.3 ms) as if the wake cost it.
 */
const fd: number | null = TRACE === null ? null : openTrace(TRACE);

function openTrace(file: string): number | null {
  try {
    return openSync(file, 'a');
  } catch {
    // A trace that cannot be written changes nothing the product does.
    return null;
  }
}

/** Record that `messageId` passed `hop` now (or at `at`: an Instant, or a process.hrtime.bigint() taken earlier). */
export function hop(name: string, messageId: unknown, at?: bigint | Instant): void {
  if (fd === null || typeof messageId !== 'string' || (ONLY !== null && !ONLY.has(name))) return;
  const when = at ?? instant();
  const line = typeof when === 'bigint' ? `${when} ${name} ${messageId} -\n` : `${when.ns} ${name} ${messageId} ${when.cpuUs}\n`;
  try {
    // One write(2) per line on the file held open, not an open, a write and a close (~15 K
    // instructions and two system calls less per hop, each inside the hop it follows).
    writeSync(fd, line);
  } catch {
    // A trace that cannot be written changes nothing the product does.
  }
}

/** The message id a raw delivery names, if it names one (the trace's key). */
export const deliveredMessageId = (raw: unknown): unknown =>
  typeof raw === 'object' && raw !== null ? ((raw as { entry?: { message_id?: unknown } }).entry ?? {}).message_id : undefined;

const stamps = new Map<string, Instant>();

/**
 * Note that `name` happened now, before the message it concerns is known (a reader woken by
 * fs.watch has not yet read what woke it); `hop(name, id, stamped(name))` records it later.
 */
export function stamp(name: string): void {
  if (TRACE !== null) stamps.set(name, instant());
}

/** The instant `stamp(name)` last noted (now when it never did). */
export const stamped = (name: string): Instant => stamps.get(name) ?? instant();
