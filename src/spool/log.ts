import { appendFileSync } from 'node:fs';
import path from 'node:path';
import type { Clock } from '../util/clock.js';
import { ENTRY_FILES } from './records.js';

/** Who is writing bridge.log, and the secrets that must never reach it. */
export interface LogContext {
  clock: Clock;
  pid: number;
  /** Exact values to strip wherever they appear (the credential in hand). */
  deny?: readonly string[];
}

const REDACTED = '[redacted]';

/** Shapes that carry a credential whatever its value: an Authorization bearer, NAME_TOKEN=…, "token":"…". */
const SECRET_SHAPES: readonly [RegExp, string][] = [
  [/\b(Bearer)\s+[^\s"',;]+/gi, `$1 ${REDACTED}`],
  [/\b([A-Z][A-Z0-9_]*TOKENS?)=[^\s"']+/g, `$1=${REDACTED}`],
  [/("(?:token|access_token|authorization)"\s*:\s*)"(?:[^"\\]|\\.)*"/gi, `$1"${REDACTED}"`],
];

/** Strip anything that looks like a credential, and every denied value, from a log text. */
export function redact(text: string, deny: readonly string[] = []): string {
  let out = text;
  for (const secret of deny) {
    if (secret.length > 0) out = out.split(secret).join(REDACTED);
  }
  for (const [shape, replacement] of SECRET_SHAPES) out = out.replace(shape, replacement);
  return out;
}

/** `<ISO> <pid> <text>`: one event, one line (newlines in the text are escaped), secrets redacted. */
export function formatLogLine(text: string, ctx: LogContext): string {
  const oneLine = redact(text, ctx.deny).replace(/\r/g, '\\r').replace(/\n/g, '\\n');
  return `${new Date(ctx.clock.now()).toISOString()} ${ctx.pid} ${oneLine}\n`;
}

/**
 * Append one line to the entry's bridge.log (0600). Logging never stops the caller: a
 * failed write returns false and the event is lost from the log only.
 */
export function appendLog(dir: string, text: string, ctx: LogContext): boolean {
  try {
    appendFileSync(path.join(dir, ENTRY_FILES.log), formatLogLine(text, ctx), { mode: 0o600 });
    return true;
  } catch {
    return false;
  }
}
