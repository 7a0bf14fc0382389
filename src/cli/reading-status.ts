import type { StateDir } from '../spool/index.js';
import { formatDuration } from '../util/duration.js';
import type { CliIO } from './io.js';

/**
 * The live status line of a reading run on a terminal (`oh-hai bridge`, `oh-hai inbox watch`;
 * docs/terminal.md): how the background connection stands, read off its consumer.json each
 * second, and how long this run still waits. Only for human output on a terminal: the caller
 * passes `raw` and nothing starts under --raw/--json or when stderr is not a terminal.
 * Returns what stops it (erasing the line) before the run's last lines.
 */
export function startReadingStatus(io: CliIO, name: string, stateDir: StateDir, waitMs: number, raw: boolean): () => void {
  return countdown(io, raw, waitMs, (left) => `${name}: ${connectionPart(stateDir, io.clock.now())} — waiting for mail, ${left} left`);
}

/** The status line of `ask --wait`: which answer it waits for, and for how much longer. */
export function startAnswerStatus(io: CliIO, name: string, messageId: string, waitMs: number, json: boolean): () => void {
  return countdown(io, json, waitMs, (left) => `${name}: waiting for the answer to ${messageId}, ${left} left`);
}

/** A status line counting `waitMs` down, unless stderr is not a terminal or the output is for a program (`off`). */
function countdown(io: CliIO, off: boolean, waitMs: number, text: (left: string) => string): () => void {
  const status = io.terminal?.status;
  if (!status || off) return () => undefined;
  const until = io.clock.monotonic() + waitMs;
  status.start(() => text(formatDuration(until - io.clock.monotonic())));
  return () => status.stop();
}

function connectionPart(stateDir: StateDir, now: number): string {
  const c = stateDir.read('consumer');
  if (c.state !== 'ok') return 'connecting';
  const r = c.value;
  if (r.state === 'stopped') return 'the connection stopped';
  // Rounded up: "next in 0s" would say it is trying now.
  if (r.retrying) return `reconnecting: attempt ${r.retrying.attempt}/${r.retrying.of}, next in ${formatDuration(Math.max(0, r.retrying.at - now) + 999)}`;
  if (r.state === 'starting') return 'connecting';
  return `connected${r.transport ? ` (${r.transport})` : ''}`;
}
