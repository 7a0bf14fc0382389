import { readKnobs } from '../../../consumer/knobs.js';
import type { CodedError } from '../../outcome.js';
import { EXIT } from '../../exit-codes.js';

/** The intervals of the sending side (docs/internals.md "Knobs"); production never sets them. */
export interface MessagingKnobs {
  /** `oh-hai ask --wait` polls GET /v1/messages/:id this often (2 s, as MCP's oh_hai_ask does). */
  askPollMs: number;
  backoffMinMs: number;
  backoffMaxMs: number;
  staleHolderSeconds: number;
}

export function readMessagingKnobs(env: NodeJS.ProcessEnv): { ok: true; value: MessagingKnobs } | { ok: false; error: CodedError } {
  const shared = readKnobs(env);
  if (!shared.ok) return shared;
  const raw = env.OH_HAI_ASK_POLL_MS;
  let askPollMs = 2000;
  if (raw !== undefined && raw.trim() !== '') {
    askPollMs = Number(raw);
    if (!Number.isFinite(askPollMs) || askPollMs <= 0) {
      return { ok: false, error: { code: 'bad_knob', exit: EXIT.usage, message: `OH_HAI_ASK_POLL_MS=${JSON.stringify(raw)} is not a positive number; unset it or give a value such as 2000` } };
    }
  }
  const k = shared.value;
  return { ok: true, value: { askPollMs, backoffMinMs: k.backoffMinMs, backoffMaxMs: k.backoffMaxMs, staleHolderSeconds: k.staleHolderSeconds } };
}
