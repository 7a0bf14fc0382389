import { fail, ok, type Result } from '../../core/index.js';

/** Which requests a fault rule matches (MA2H §11 fault injection, reference Hub only). */
export const FAULT_CLASSES = ['drain', 'stream', 'ack', 'sessions', 'messages', 'capability', 'any'] as const;
export type FaultClass = (typeof FAULT_CLASSES)[number];

export const FAULT_ACTIONS = ['status', 'delay', 'drop', 'tamper'] as const;
export type FaultAction = (typeof FAULT_ACTIONS)[number];

export const TAMPER_MODES = ['signature_syntax', 'stale_t', 'replay_jti', 'cross_type_field', 'unknown_field', 'wrong_agent', 'wrong_session'] as const;
export type TamperMode = (typeof TAMPER_MODES)[number];

export interface FaultRule {
  class: FaultClass;
  action: FaultAction;
  /** For `status`: the HTTP status to answer with (default 503). */
  status?: number;
  /** For `delay`: how long to hold the request before handling it. */
  delay_ms?: number;
  /** For `tamper`: how to alter one outgoing delivery. */
  tamper?: TamperMode;
  /** Apply to the next n matching requests (deliveries for `tamper`); absent = until cleared. */
  count?: number;
}

/** The request classes a route belongs to; `any` matches every class. */
export type RequestClass = Exclude<FaultClass, 'any'> | 'other';

const isOneOf = <T extends string>(list: readonly T[], v: unknown): v is T => typeof v === 'string' && (list as readonly string[]).includes(v);

/** Validate a `POST /v1/_faults` body: `{"rules": [FaultRule…]}`; `{"rules": []}` clears. */
export function parseFaultRules(body: unknown): Result<FaultRule[]> {
  if (typeof body !== 'object' || body === null || !Array.isArray((body as { rules?: unknown }).rules)) {
    return fail('the body must be {"rules": [ … ]} (an empty list clears every rule)');
  }
  const rules: FaultRule[] = [];
  for (const [i, raw] of (body as { rules: unknown[] }).rules.entries()) {
    const where = `rules[${i}]`;
    if (typeof raw !== 'object' || raw === null) return fail(`${where} must be an object`);
    const r = raw as Record<string, unknown>;
    for (const key of Object.keys(r)) {
      if (!['class', 'action', 'status', 'delay_ms', 'tamper', 'count'].includes(key)) return fail(`${where} has unknown field '${key}'`);
    }
    if (!isOneOf(FAULT_CLASSES, r.class)) return fail(`${where}.class must be one of ${FAULT_CLASSES.join(', ')}`);
    if (!isOneOf(FAULT_ACTIONS, r.action)) return fail(`${where}.action must be one of ${FAULT_ACTIONS.join(', ')}`);
    const rule: FaultRule = { class: r.class, action: r.action };
    if (r.status !== undefined) {
      if (!Number.isInteger(r.status) || (r.status as number) < 400 || (r.status as number) > 599) {
        return fail(`${where}.status must be an integer HTTP error status (400–599)`);
      }
      rule.status = r.status as number;
    }
    if (r.delay_ms !== undefined) {
      if (typeof r.delay_ms !== 'number' || !Number.isFinite(r.delay_ms) || r.delay_ms < 0) return fail(`${where}.delay_ms must be a number ≥ 0`);
      rule.delay_ms = r.delay_ms;
    }
    if (r.tamper !== undefined) {
      if (!isOneOf(TAMPER_MODES, r.tamper)) return fail(`${where}.tamper must be one of ${TAMPER_MODES.join(', ')}`);
      rule.tamper = r.tamper;
    }
    if (r.count !== undefined) {
      if (!Number.isInteger(r.count) || (r.count as number) < 1) return fail(`${where}.count must be an integer ≥ 1`);
      rule.count = r.count as number;
    }
    if (rule.action === 'delay' && rule.delay_ms === undefined) return fail(`${where}: action 'delay' needs delay_ms`);
    if (rule.action === 'tamper' && rule.tamper === undefined) return fail(`${where}: action 'tamper' needs tamper (${TAMPER_MODES.join(', ')})`);
    if (rule.action === 'tamper' && !['drain', 'stream', 'any'].includes(rule.class)) {
      return fail(`${where}: tamper alters a delivery, so its class must be drain, stream or any`);
    }
    rules.push(rule);
  }
  return ok(rules);
}

/** What the fault table tells a request to do before it is handled. */
export interface RequestFaults {
  delayMs: number;
  /** Answer with this status instead of handling the request. */
  status: number | null;
  /** Destroy the socket (for a stream: after the `open` event). */
  drop: boolean;
}

/**
 * The live fault table. Counted rules are consumed as they apply, so `count: 1` fails
 * exactly the next matching request and then the Hub is healthy again.
 */
export class FaultTable {
  private rules: FaultRule[] = [];

  set(rules: FaultRule[]): void {
    this.rules = rules.map((r) => ({ ...r }));
  }

  /** Request-level faults (delay, status, drop) for one request of this class. */
  forRequest(cls: RequestClass): RequestFaults {
    const out: RequestFaults = { delayMs: 0, status: null, drop: false };
    for (const action of ['delay', 'status', 'drop'] as const) {
      const rule = this.take(cls, action);
      if (!rule) continue;
      if (action === 'delay') out.delayMs = rule.delay_ms ?? 0;
      else if (action === 'status') out.status = rule.status ?? 503;
      else out.drop = true;
    }
    return out;
  }

  /** The tamper mode for the next delivery on a drain or stream, if a rule applies. */
  tamperFor(cls: 'drain' | 'stream'): TamperMode | null {
    return this.take(cls, 'tamper')?.tamper ?? null;
  }

  private take(cls: RequestClass, action: FaultAction): FaultRule | undefined {
    const idx = this.rules.findIndex((r) => r.action === action && (r.class === cls || (r.class === 'any' && cls !== 'other')));
    if (idx < 0) return undefined;
    const rule = this.rules[idx]!;
    if (rule.count !== undefined) {
      rule.count -= 1;
      if (rule.count <= 0) this.rules.splice(idx, 1);
    }
    return rule;
  }
}
