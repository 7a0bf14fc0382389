import { type Coded, done, usageFailure } from './coded.js';

export const TRANSPORTS = ['auto', 'sse', 'poll'] as const;
export type Transport = (typeof TRANSPORTS)[number];

export type NumericKnob = 'waitSeconds' | 'unattendedMaxSeconds' | 'intervalSeconds' | 'maxRetries';

interface NumericKnobSpec {
  /** The `[bridge]` key. */
  key: string;
  /** The environment variable (docs/internals.md "Knobs"). */
  env: string;
  fallback: number;
  integer: boolean;
  /** Why a value is out of range, or null. */
  range(n: number): string | null;
  expected: string;
}

const seconds = 'a number of seconds (fractions allowed)';

/** Every numeric `[bridge]` setting: its key, its variable, its default and its range. */
export const NUMERIC_KNOBS: Record<NumericKnob, NumericKnobSpec> = {
  waitSeconds: {
    key: 'wait_seconds',
    env: 'OH_HAI_WAIT_SECONDS',
    fallback: 540,
    integer: false,
    expected: seconds,
    range: (n) => (n < 0 ? 'it cannot be negative (0 prints what is waiting and exits)' : null),
  },
  unattendedMaxSeconds: {
    key: 'unattended_max_seconds',
    env: 'OH_HAI_UNATTENDED_MAX_SECONDS',
    fallback: 900,
    integer: false,
    expected: seconds,
    range: (n) =>
      n <= 0
        ? 'it must be greater than 0: 0 or less never disabled the unattended bound (a connection run under a service manager with --mode direct has none)'
        : null,
  },
  intervalSeconds: {
    key: 'interval_seconds',
    env: 'OH_HAI_INTERVAL_SECONDS',
    fallback: 5,
    integer: false,
    expected: seconds,
    range: (n) => (n <= 0 ? 'it must be greater than 0' : null),
  },
  maxRetries: {
    key: 'max_retries',
    env: 'OH_HAI_MAX_RETRIES',
    fallback: 8,
    integer: true,
    expected: 'a whole number',
    range: (n) => (n < 0 ? 'it cannot be negative' : null),
  },
};

const DECIMAL = /^[+-]?(\d+(\.\d*)?|\.\d+)$/u;

export const describeValue = (v: unknown): string => {
  if (typeof v === 'string') return `the string ${JSON.stringify(v)}`;
  if (Array.isArray(v)) return `a list of ${v.length}`;
  if (v !== null && typeof v === 'object') return 'a table';
  return String(v);
};

/**
 * Check one numeric setting. `where` names its source (`<file>: [bridge] wait_seconds`,
 * `OH_HAI_WAIT_SECONDS`, `--wait`); text (from a flag or a variable) is parsed as a decimal.
 */
export function checkNumber(knob: NumericKnob, value: unknown, where: string): Coded<number> {
  const spec = NUMERIC_KNOBS[knob];
  const n = typeof value === 'string' && DECIMAL.test(value.trim()) ? Number(value.trim()) : value;
  if (typeof n !== 'number' || !Number.isFinite(n) || (spec.integer && !Number.isInteger(n)))
    return usageFailure('invalid_setting', `${where} must be ${spec.expected}, got ${describeValue(value)}`);
  const problem = spec.range(n);
  if (problem) return usageFailure('invalid_setting', `${where} is ${n}: ${problem}`);
  return done(n);
}

export function checkTransport(value: unknown, where: string): Coded<Transport> {
  const found = TRANSPORTS.find((t) => t === value);
  if (found) return done(found);
  return usageFailure('invalid_setting', `${where} must be one of ${TRANSPORTS.join(', ')}, got ${describeValue(value)}`);
}
