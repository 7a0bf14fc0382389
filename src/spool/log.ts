import { closeSync, fstatSync, openSync, readFileSync, renameSync, statSync, unlinkSync, writeSync } from 'node:fs';
import path from 'node:path';
import type { Clock } from '../util/clock.js';
import { escapeUnsafe } from '../util/escape.js';
import { KNOBS } from '../core/index.js';
import { processExited } from './process.js';
import { openStateFile } from './safe-open.js';
import { STATE_FILES } from './records.js';

/** Who is writing bridge.log, and the secrets that must never reach it. */
export interface LogContext {
  clock: Clock;
  pid: number;
  /** Exact values to strip wherever they appear (the credential in hand). */
  deny?: readonly string[];
  /** Rotate bridge.log once it holds this many bytes (default LOG_MAX_BYTES; knob OH_HAI_LOG_MAX_BYTES). */
  maxBytes?: number;
}

/** bridge.log's size bound before it is rotated to bridge.log.1 (the knob registry's default). */
export const LOG_MAX_BYTES = KNOBS.logMaxBytes.default;

/** The previous generation of bridge.log: the only one kept. */
export const ROTATED_LOG = `${STATE_FILES.log}.1`;

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

/** `<ISO> <pid> <text>`: one event, one line (controls, C1, bidi overrides escaped: escapeUnsafe), secrets redacted. */
export function formatLogLine(text: string, ctx: LogContext): string {
  const oneLine = escapeUnsafe(redact(text, ctx.deny));
  return `${new Date(ctx.clock.now()).toISOString()} ${ctx.pid} ${oneLine}\n`;
}

/**
 * Append one line to the entry's bridge.log (0600), rotating it to bridge.log.1 once it
 * reaches the bound. Logging never stops the caller: a failed write returns false and the
 * event is lost from the log only.
 *
 * The file is opened by path on every append (O_APPEND), so after a rotation the next append
 * of every process creates the new bridge.log; a line written through a descriptor opened
 * just before the rename lands in bridge.log.1. The size check is an fstat of the descriptor
 * already open, about a microsecond.
 */
export function appendLog(dir: string, text: string, ctx: LogContext): boolean {
  const file = path.join(dir, STATE_FILES.log);
  let size: number;
  try {
    const fd = openStateFile(file, 'append');
    try {
      writeSync(fd, formatLogLine(text, ctx));
      size = fstatSync(fd).size;
    } finally {
      closeSync(fd);
    }
  } catch {
    return false;
  }
  if (size >= (ctx.maxBytes ?? LOG_MAX_BYTES)) rotateLog(dir, ctx);
  return true;
}

const ROTATE_LOCK = `${STATE_FILES.log}.rotating`;

/**
 * bridge.log → bridge.log.1, one process at a time: two processes that both saw the bound
 * reached would otherwise both rename, and the second would replace the full generation in
 * bridge.log.1 with the few lines just begun. Under the lock the size is read again from the
 * path, so only the generation still in place is rotated. The lock names its holder's pid:
 * a holder killed inside these few syscalls leaves it behind, and the next appender removes
 * it (rotating on a later append). While another process holds it, this append leaves the
 * rotation to it.
 */
function rotateLog(dir: string, ctx: LogContext): void {
  const lock = path.join(dir, ROTATE_LOCK);
  let fd: number;
  try {
    fd = openSync(lock, 'wx', 0o600);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') clearDeadRotateLock(lock);
    return;
  }
  try {
    writeSync(fd, String(ctx.pid));
    closeSync(fd);
    const file = path.join(dir, STATE_FILES.log);
    if (statSync(file).size >= (ctx.maxBytes ?? LOG_MAX_BYTES)) renameSync(file, path.join(dir, ROTATED_LOG));
  } catch {
    /* the log keeps growing until a later append rotates it */
  } finally {
    try {
      unlinkSync(lock);
    } catch {
      /* already gone */
    }
  }
}

function clearDeadRotateLock(lock: string): void {
  try {
    const pid = Number(readFileSync(lock, 'utf8'));
    // An empty file is a holder between its create and its write: leave it.
    if (pid > 0 && processExited(pid)) unlinkSync(lock);
  } catch {
    /* gone meanwhile, or unreadable: the next append looks again */
  }
}
