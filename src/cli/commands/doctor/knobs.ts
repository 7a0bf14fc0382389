import { readKnobs } from '../../../consumer/knobs.js';
import { EXIT } from '../../exit-codes.js';
import type { CodedError } from '../../outcome.js';

/**
 * Doctor's intervals (docs/internals.md "Knobs"). The stale bound and the replay-window
 * override are the consumer's own knobs: doctor must judge a heartbeat and a `t` exactly as
 * the connection does.
 */
export interface DoctorKnobs {
  /** OH_HAI_DOCTOR_TIMEOUT_SECONDS: each Hub request's timeout, and how long the drain step waits for the notify. */
  timeoutMs: number;
  /** A heartbeat older than this is not attendance (OH_HAI_STALE_HOLDER_SECONDS). */
  staleMs: number;
  replayWindowSeconds: number | null;
}

export const DEFAULT_TIMEOUT_SECONDS = 10;

export function readDoctorKnobs(env: NodeJS.ProcessEnv): { ok: true; value: DoctorKnobs } | { ok: false; error: CodedError } {
  const shared = readKnobs(env);
  if (!shared.ok) return shared;
  const raw = env.OH_HAI_DOCTOR_TIMEOUT_SECONDS;
  let seconds = DEFAULT_TIMEOUT_SECONDS;
  if (raw !== undefined && raw.trim() !== '') {
    seconds = Number(raw);
    if (!Number.isFinite(seconds) || seconds <= 0) {
      return {
        ok: false,
        error: {
          code: 'bad_knob',
          exit: EXIT.usage,
          message: `OH_HAI_DOCTOR_TIMEOUT_SECONDS=${JSON.stringify(raw)} is not a positive number of seconds; unset it or give a value such as ${DEFAULT_TIMEOUT_SECONDS}`,
        },
      };
    }
  }
  return {
    ok: true,
    value: { timeoutMs: seconds * 1000, staleMs: shared.value.staleHolderSeconds * 1000, replayWindowSeconds: shared.value.replayWindowSeconds },
  };
}
