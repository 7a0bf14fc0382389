import { readKnobs } from '../../../consumer/knobs.js';
import type { CodedError } from '../../outcome.js';
import { EXIT } from '../../exit-codes.js';

/** The intervals of the sending side (docs/internals.md "Knobs"); production never sets them. */
export interface MessagingKnobs {
  /** `oh-hai ask --wait` polls GET /v1/messages/:id this often (2 s, as MCP's oh_hai_ask does). */
  askPollMs: number;
  /** `oh-hai session close` waits this long for the connection's clean stop after SIGTERM. */
  stopWaitMs: number;
  backoffMinMs: number;
  backoffMaxMs: number;
  staleHolderSeconds: number;
}

export function readMessagingKnobs(env: NodeJS.ProcessEnv): { ok: true; value: MessagingKnobs } | { ok: false; error: CodedError } {
  const shared = readKnobs(env);
  if (!shared.ok) return shared;
  const askPollMs = positive(env, 'OH_HAI_ASK_POLL_MS', 2000);
  if (!askPollMs.ok) return askPollMs;
  const stopWaitMs = positive(env, 'OH_HAI_STOP_WAIT_MS', 30_000);
  if (!stopWaitMs.ok) return stopWaitMs;
  const k = shared.value;
  return {
    ok: true,
    value: { askPollMs: askPollMs.value, stopWaitMs: stopWaitMs.value, backoffMinMs: k.backoffMinMs, backoffMaxMs: k.backoffMaxMs, staleHolderSeconds: k.staleHolderSeconds },
  };
}

function positive(env: NodeJS.ProcessEnv, name: string, fallback: number): { ok: true; value: number } | { ok: false; error: CodedError } {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return { ok: true, value: fallback };
  const n = Number(raw);
  if (Number.isFinite(n) && n > 0) return { ok: true, value: n };
  return { ok: false, error: { code: 'bad_knob', exit: EXIT.usage, message: `${name}=${JSON.stringify(raw)} is not a positive number; unset it or give a value such as ${fallback}` } };
}
