import { type Coded, describeValue, done, usageFailure } from '../core/index.js';

/**
 * `[bridge] retain_printed` / `OH_HAI_RETAIN_PRINTED`: how long the spool keeps records the
 * reader has printed AND the Hub has acknowledged. A sealed segment of such records is
 * removed once it is outside any bound: more than `records` such records are newer, more
 * than `bytes` of them are in newer segments, or its newest record is older than `days`. Unprinted or unacknowledged records are never
 * removed, whatever the bounds. Why the defaults: docs/spool.md.
 */
export interface RetainPrinted {
  records: number;
  days: number;
  bytes: number;
}

const MIB = 1 << 20;

export const DEFAULT_RETAIN_PRINTED: RetainPrinted = Object.freeze({ records: 10_000, days: 7, bytes: 64 * MIB });

export const RETAIN_PRINTED_ENV = 'OH_HAI_RETAIN_PRINTED';

const PART = /^(\d+(?:\.\d+)?)\s*(records?|days?|bytes?|KiB|MiB|GiB)$/u;

const BYTE_UNITS: Record<string, number> = { byte: 1, bytes: 1, KiB: 1 << 10, MiB: MIB, GiB: 1 << 30 };

const EXPECTED =
  'a string such as "10000 records / 7 days / 64 MiB" (a part left out keeps its default; records a whole number \u2265 0, days a number \u2265 0, a size in bytes, KiB, MiB or GiB)';

/** Parse `"<n> records / <d> days / <size>"`; a part left out keeps its default. `where` names the source for the error. */
export function parseRetainPrinted(value: unknown, where: string): Coded<RetainPrinted> {
  const bad = () => usageFailure<RetainPrinted>('invalid_setting', `${where} must be ${EXPECTED}, got ${describeValue(value)}`);
  if (typeof value !== 'string' || value.trim() === '') return bad();
  const out: Partial<RetainPrinted> = {};
  for (const part of value.split('/')) {
    const m = PART.exec(part.trim());
    if (!m) return bad();
    const scale = BYTE_UNITS[m[2]!];
    const n = Number(m[1]) * (scale ?? 1);
    const unit = scale !== undefined ? 'bytes' : m[2]!.startsWith('record') ? 'records' : 'days';
    if (out[unit] !== undefined || (unit !== 'days' && !Number.isInteger(n))) return bad();
    out[unit] = n;
  }
  return done({ ...DEFAULT_RETAIN_PRINTED, ...out });
}

function formatBytes(n: number): string {
  for (const unit of ['GiB', 'MiB', 'KiB'] as const) if (n >= BYTE_UNITS[unit]! && n % BYTE_UNITS[unit]! === 0) return `${n / BYTE_UNITS[unit]!} ${unit}`;
  return `${n} bytes`;
}

export const formatRetainPrinted = (r: RetainPrinted): string => `${r.records} records / ${r.days} days / ${formatBytes(r.bytes)}`;

export const isDefaultRetainPrinted = (r: RetainPrinted): boolean =>
  r.records === DEFAULT_RETAIN_PRINTED.records && r.days === DEFAULT_RETAIN_PRINTED.days && r.bytes === DEFAULT_RETAIN_PRINTED.bytes;
