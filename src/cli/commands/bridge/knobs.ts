import { readKnobs } from '../../../consumer/knobs.js';
import type { CodedError } from '../../outcome.js';
import { EXIT } from '../../exit-codes.js';

/**
 * The reader's intervals (docs/internals.md "Knobs"). The heartbeat and the stale bound are
 * the same knobs the consumer reads — both processes must judge a heartbeat alike — so
 * they come from the consumer's reader of them.
 */
export interface ReaderKnobs {
  heartbeatMs: number;
  staleMs: number;
  /** OH_HAI_READER_GRACE_SECONDS: the declared deadline is the wait bound plus this. */
  graceSeconds: number;
}

export function readReaderKnobs(env: NodeJS.ProcessEnv): { ok: true; value: ReaderKnobs } | { ok: false; error: CodedError } {
  const shared = readKnobs(env);
  if (!shared.ok) return shared;
  const raw = env.OH_HAI_READER_GRACE_SECONDS;
  let graceSeconds = 30;
  if (raw !== undefined && raw.trim() !== '') {
    graceSeconds = Number(raw);
    if (!Number.isFinite(graceSeconds) || graceSeconds < 0) {
      return {
        ok: false,
        error: { code: 'bad_knob', exit: EXIT.usage, message: `OH_HAI_READER_GRACE_SECONDS=${JSON.stringify(raw)} is not a number of seconds ≥ 0; unset it or give a value such as 30` },
      };
    }
  }
  return { ok: true, value: { heartbeatMs: shared.value.heartbeatMs, staleMs: shared.value.staleHolderSeconds * 1000, graceSeconds } };
}
