import { type Coded, describeValue, done, usageFailure } from '../core/index.js';

/**
 * `[bridge] retain_printed` / `OH_HAI_RETAIN_PRINTED`: how long the spool keeps records the
 * reader has printed AND the Hub has acknowledged. A sealed segment of such records is
 * removed once it is outside either bound: more than `records` such records are newer, or
 * its newest record is older than `days`. Unprinted or unacknowledged records are never
 * removed, whatever the bounds. Why the defaults: docs/spool.md.
 */
export interface RetainPrinted {
  records: number;
  days: number;
}

export const DEFAULT_RETAIN_PRINTED: RetainPrinted = Object.freeze({ records: 10_000, days: 7 });

export const RETAIN_PRINTED_ENV = 'OH_HAI_RETAIN_PRINTED';

const PART = /^(\d+(?:\.\d+)?)\s*(records?|days?)$/u;

const EXPECTED =
  'a string such as "10000 records / 7 days" (either part alone keeps the other\u2019s default; records a whole number \u2265 0, days a number \u2265 0)';

/** Parse `"<n> records / <d> days"`; a part left out keeps its default. `where` names the source for the error. */
export function parseRetainPrinted(value: unknown, where: string): Coded<RetainPrinted> {
  const bad = () => usageFailure<RetainPrinted>('invalid_setting', `${where} must be ${EXPECTED}, got ${describeValue(value)}`);
  if (typeof value !== 'string' || value.trim() === '') return bad();
  const out: Partial<RetainPrinted> = {};
  for (const part of value.split('/')) {
    const m = PART.exec(part.trim());
    if (!m) return bad();
    const n = Number(m[1]);
    const unit = m[2]!.startsWith('record') ? 'records' : 'days';
    if (out[unit] !== undefined || (unit === 'records' && !Number.isInteger(n))) return bad();
    out[unit] = n;
  }
  return done({ ...DEFAULT_RETAIN_PRINTED, ...out });
}

export const formatRetainPrinted = (r: RetainPrinted): string => `${r.records} records / ${r.days} days`;

export const isDefaultRetainPrinted = (r: RetainPrinted): boolean => r.records === DEFAULT_RETAIN_PRINTED.records && r.days === DEFAULT_RETAIN_PRINTED.days;
