import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isIsoInstant } from '../../../src/util/shape.js';
import { fuzzParameters } from '../../helpers/fuzz.js';

/**
 * The Date-based check isIsoInstant replaced (it parsed every printed entry's created_at with
 * Date.parse and a Date): kept here as the oracle, so the digit-by-digit check accepts and
 * refuses exactly the same strings.
 */
const BEFORE = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/;
function before(s: string): boolean {
  const m = BEFORE.exec(s);
  if (!m) return false;
  const [, y, mo, d, h, mi, se] = m.map(Number) as number[];
  if (Number.isNaN(Date.parse(s))) return false;
  const probe = new Date(Date.UTC(y!, mo! - 1, d!, h!, mi!, se!));
  return probe.getUTCMonth() === mo! - 1 && probe.getUTCDate() === d! && h! < 24 && mi! < 60 && se! < 60;
}

const pad = (n: number, width: number): string => String(n).padStart(width, '0');
const instant = (y: number, mo: number, d: number, h = 0, mi = 0, se = 0, frac = '', zone = 'Z'): string =>
  `${pad(y, 4)}-${pad(mo, 2)}-${pad(d, 2)}T${pad(h, 2)}:${pad(mi, 2)}:${pad(se, 2)}${frac}${zone}`;

function same(s: string): void {
  expect(isIsoInstant(s), s).toBe(before(s));
}

describe('isIsoInstant: the same verdict as the Date-based check it replaced', () => {
  it('every month and day number 00–99 of leap and common years, years 0000–0099 (read as 19xx) among them', () => {
    for (const y of [0, 1, 4, 96, 99, 100, 400, 1900, 1970, 2000, 2024, 2026, 2100, 9999]) {
      for (let mo = 0; mo < 100; mo++) for (let d = 0; d < 100; d++) same(instant(y, mo, d));
    }
  });

  it('Feb 29 of every year 0000–2400', () => {
    for (let y = 0; y <= 2400; y++) same(instant(y, 2, 29));
  });

  it('every hour, minute and second number 00–99', () => {
    for (let v = 0; v < 100; v++) {
      same(instant(2026, 1, 15, v, 0, 0));
      same(instant(2026, 1, 15, 0, v, 0));
      same(instant(2026, 1, 15, 0, 0, v));
      same(instant(2026, 1, 15, v, v, v));
    }
  });

  it('every zone offset ±00:00–±99:99, and Z', () => {
    same(instant(2026, 1, 15, 10, 20, 30, '', 'Z'));
    for (const sign of ['+', '-']) {
      for (let hh = 0; hh < 100; hh++) for (let mm = 0; mm < 100; mm++) same(instant(2026, 1, 15, 10, 20, 30, '', `${sign}${pad(hh, 2)}:${pad(mm, 2)}`));
    }
  });

  it('fractions of 0–10 digits, and shapes that are not an instant', () => {
    for (let n = 0; n <= 10; n++) same(instant(2026, 12, 31, 23, 59, 59, n === 0 ? '.' : `.${'7'.repeat(n)}`));
    for (const s of [
      '',
      'Z',
      '2026-01-15',
      '2026-01-15T10:20:30',
      '2026-01-15 10:20:30Z',
      '2026-01-15t10:20:30z',
      '+02026-01-15T10:20:30Z',
      '2026-1-15T10:20:30Z',
      '2026-01-15T10:20:30+0100',
      '2026-01-15T10:20:30Z\n',
      ' 2026-01-15T10:20:30Z',
      '２０２６-01-15T10:20:30Z',
    ]) {
      same(s);
    }
  });

  it('arbitrary digits in every field (fuzzed)', () => {
    const digits = (n: number): fc.Arbitrary<string> => fc.string({ unit: fc.constantFrom(...'0123456789'), minLength: n, maxLength: n });
    const zone = fc.oneof(
      fc.constant('Z'),
      fc.tuple(fc.constantFrom('+', '-'), digits(2), digits(2)).map(([s, h, m]) => `${s}${h}:${m}`),
    );
    const frac = fc.oneof(
      fc.constant(''),
      fc.integer({ min: 1, max: 9 }).chain((n) => digits(n).map((d) => `.${d}`)),
    );
    fc.assert(
      fc.property(digits(4), digits(2), digits(2), digits(2), digits(2), digits(2), frac, zone, (y, mo, d, h, mi, se, f, z) => {
        same(`${y}-${mo}-${d}T${h}:${mi}:${se}${f}${z}`);
      }),
      fuzzParameters(0x150, 20_000),
    );
  });
});
