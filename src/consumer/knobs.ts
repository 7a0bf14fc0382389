import type { CodedError } from '../cli/outcome.js';
import { EXIT } from '../cli/exit-codes.js';
import { fail, ok, type Result } from '../util/result.js';

/**
 * The consumer's intervals that are not settings (docs/internals.md "Knobs"). They exist so
 * a test can shrink every wait the product doc names; production never sets them.
 */
export interface ConsumerKnobs {
  heartbeatMs: number;
  backoffMinMs: number;
  backoffMaxMs: number;
  /** Replaces the Hub's advertised replay window; only for tests of the fallback. */
  replayWindowSeconds: number | null;
  /** A reader heartbeat older than this is not attendance. */
  staleHolderSeconds: number;
  /** The cursor's safety poll, behind fs.watch (which can miss events on some filesystems). */
  cursorPollMs: number;
}

interface KnobSpec {
  name: string;
  fallback: number;
}

const SPECS = {
  heartbeatMs: { name: 'OH_HAI_HEARTBEAT_MS', fallback: 5000 },
  backoffMinMs: { name: 'OH_HAI_BACKOFF_MIN_MS', fallback: 1000 },
  backoffMaxMs: { name: 'OH_HAI_BACKOFF_MAX_MS', fallback: 30_000 },
  staleHolderSeconds: { name: 'OH_HAI_STALE_HOLDER_SECONDS', fallback: 60 },
  cursorPollMs: { name: 'OH_HAI_CURSOR_POLL_MS', fallback: 1000 },
} satisfies Record<string, KnobSpec>;

function positive(env: NodeJS.ProcessEnv, spec: KnobSpec): Result<number> {
  const raw = env[spec.name];
  if (raw === undefined || raw.trim() === '') return ok(spec.fallback);
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0) {
    return fail(`${spec.name}=${JSON.stringify(raw)} is not a positive number; unset it or give a value such as ${spec.fallback}`);
  }
  return ok(n);
}

export function readKnobs(env: NodeJS.ProcessEnv): { ok: true; value: ConsumerKnobs } | { ok: false; error: CodedError } {
  const values: Partial<Record<keyof typeof SPECS, number>> = {};
  for (const [key, spec] of Object.entries(SPECS) as [keyof typeof SPECS, KnobSpec][]) {
    const r = positive(env, spec);
    if (!r.ok) return { ok: false, error: { code: 'bad_knob', message: r.reason, exit: EXIT.usage } };
    values[key] = r.value;
  }
  let replayWindowSeconds: number | null = null;
  if (env.OH_HAI_REPLAY_WINDOW_SECONDS !== undefined && env.OH_HAI_REPLAY_WINDOW_SECONDS.trim() !== '') {
    const r = positive(env, { name: 'OH_HAI_REPLAY_WINDOW_SECONDS', fallback: 300 });
    if (!r.ok) return { ok: false, error: { code: 'bad_knob', message: r.reason, exit: EXIT.usage } };
    replayWindowSeconds = r.value;
  }
  const v = values as Record<keyof typeof SPECS, number>;
  if (v.backoffMaxMs < v.backoffMinMs) {
    return {
      ok: false,
      error: {
        code: 'bad_knob',
        message: `OH_HAI_BACKOFF_MAX_MS (${v.backoffMaxMs}) is below OH_HAI_BACKOFF_MIN_MS (${v.backoffMinMs}); the cap must be at least the floor`,
        exit: EXIT.usage,
      },
    };
  }
  return { ok: true, value: { ...v, replayWindowSeconds } };
}
