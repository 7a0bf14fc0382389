import { EXIT } from '../core/index.js';
import { escapeUnsafe } from '../util/escape.js';

/**
 * Why a consumer stopped. Every stop is written into consumer.json (state `stopped`,
 * exit_code, stop_reason, stop_message) before the process exits with `exit`; the reader
 * relays it, so the message must say what happened, where, and what to do.
 */
export type StopReason =
  | 'unauthorized'
  | 'messaging_disabled'
  | 'forbidden'
  | 'session_not_found'
  | 'session_lapsed'
  | 'session_closed'
  | 'session_closed_by_operator'
  | 'session_held'
  | 'unreachable'
  | 'verification_failed'
  | 'replaced'
  | 'unattended'
  | 'signal'
  | 'hub_unsupported'
  | 'spool_write_failed'
  | 'lock_compromised'
  | 'state_unreadable'
  | 'bad_settings'
  | 'no_credential'
  | 'credential_mismatch'
  | 'consumer_running'
  | 'internal_error';

export interface Stop {
  exit: number;
  reason: StopReason;
  message: string;
}

/** The message is one line with nothing a terminal acts on (escapeUnsafe): it may quote a Hub's words. */
export const stop = (exit: number, reason: StopReason, message: string): Stop => ({ exit, reason, message: escapeUnsafe(message) });

/** Stops that are decisions or clean ends rather than failures (the reader prints no FATAL for these). */
export const isQuietStop = (s: Stop): boolean => s.exit === EXIT.ok;
