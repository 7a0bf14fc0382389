import type { Capability } from '../contract/index.js';
import { HOLD_MARGIN_MS } from './http.js';

/** MA2H's production figures, used when the Hub advertises none. */
const DEFAULT_HOLD_SECONDS = 30;
const DEFAULT_KEEPALIVE_SECONDS = 15;
/** Floors so a test Hub's sub-second figures never make a healthy connection look dead. */
export const MIN_STREAM_HEADERS_TIMEOUT_MS = 30_000;
export const MIN_STREAM_BODY_TIMEOUT_MS = 10_000;
/**
 * How long a stream waits, after `reconnect`, for the end of the answer so its connection can carry
 * the reconnect. The Hub writes the terminator with the event; a proxy forwards it at once. Far
 * below HOLD_MARGIN_MS (the slack every hold is read with): a terminator later than this costs one
 * new connection, never a reconnect held back longer.
 */
export const STREAM_END_GRACE_MS = 1_000;

export interface StreamTimeouts {
  headersTimeout: number;
  bodyTimeout: number;
}

/**
 * undici's timers for one stream connect. headersTimeout must outlast the longest hold
 * the Hub may use, and bodyTimeout the longest silence it promises: one keep-alive
 * interval (twice over, so one late keep-alive is not a fault), or the whole hold when it
 * advertises no keep-alive.
 */
export function streamTimeouts(cap: Capability | null | undefined): StreamTimeouts {
  const holdMs = (cap?.inbound.stream_max_hold_seconds ?? DEFAULT_HOLD_SECONDS) * 1000;
  const keepaliveSeconds = cap ? cap.inbound.keepalive_seconds : DEFAULT_KEEPALIVE_SECONDS;
  const silenceMs = keepaliveSeconds === null ? holdMs : keepaliveSeconds * 1000;
  return {
    headersTimeout: Math.max(MIN_STREAM_HEADERS_TIMEOUT_MS, holdMs + HOLD_MARGIN_MS),
    bodyTimeout: Math.max(MIN_STREAM_BODY_TIMEOUT_MS, 2 * silenceMs + HOLD_MARGIN_MS),
  };
}
