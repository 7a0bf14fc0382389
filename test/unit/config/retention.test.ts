import { describe, expect, it } from 'vitest';
import { DEFAULT_RETAIN_PRINTED, formatRetainPrinted, parseRetainPrinted, resolveSettings, type RetainPrinted } from '../../../src/config/index.js';

const MIB = 1 << 20;

describe('[bridge] retain_printed', () => {
  it.each([
    ['10000 records / 7 days', { records: 10000, days: 7, bytes: 64 * MIB }],
    ['500 records', { records: 500, days: 7, bytes: 64 * MIB }],
    ['1.5 days', { records: 10000, days: 1.5, bytes: 64 * MIB }],
    ['0 records/ 0 days', { records: 0, days: 0, bytes: 64 * MIB }],
    ['1 record / 1 day', { records: 1, days: 1, bytes: 64 * MIB }],
    ['16 MiB', { records: 10000, days: 7, bytes: 16 * MIB }],
    ['2 records / 1 day / 1.5 GiB', { records: 2, days: 1, bytes: 1.5 * 1024 * MIB }],
    ['512 KiB / 3 records', { records: 3, days: 7, bytes: 512 * 1024 }],
    ['0 bytes', { records: 10000, days: 7, bytes: 0 }],
  ])('%s', (text, want) => {
    expect(parseRetainPrinted(text, 'x')).toEqual({ ok: true, value: want });
  });

  it.each([['7d'], ['-1 records'], ['1.5 records'], ['3 records / 4 records'], [''], [7], ['1.5 bytes'], ['1 MB'], ['1 MiB / 2 KiB']])(
    'refuses %j with exit 2, naming where and the syntax',
    (bad) => {
      const r = parseRetainPrinted(bad, 'OH_HAI_RETAIN_PRINTED');
      expect(r.ok).toBe(false);
      if (!r.ok) {
        expect(r.error.exit).toBe(2);
        expect(r.error.message).toMatch(/^OH_HAI_RETAIN_PRINTED must be a string such as "10000 records \/ 7 days \/ 64 MiB"/);
      }
    },
  );

  it('resolves environment over the user file over the default', () => {
    const loaded = (retainPrinted?: RetainPrinted) => ({
      user: { path: '/u/config.toml', settings: { numbers: {}, ...(retainPrinted ? { retainPrinted } : {}) } },
      project: null,
      warnings: [],
    });
    const resolve = (env: NodeJS.ProcessEnv, file?: RetainPrinted) => {
      const r = resolveSettings({ flags: {}, env, loaded: loaded(file) as never });
      if (!r.ok) throw new Error(r.error.message);
      return r.value.bridge.retainPrinted;
    };
    expect(resolve({})).toEqual(DEFAULT_RETAIN_PRINTED);
    expect(resolve({}, { records: 5, days: 1, bytes: 7 })).toEqual({ records: 5, days: 1, bytes: 7 });
    expect(resolve({ OH_HAI_RETAIN_PRINTED: '9 records' }, { records: 5, days: 1, bytes: 7 })).toEqual({ records: 9, days: 7, bytes: 64 * MIB });
  });

  it('prints the bound in the syntax it is written in', () => {
    expect(formatRetainPrinted(DEFAULT_RETAIN_PRINTED)).toBe('10000 records / 7 days / 64 MiB');
    expect(formatRetainPrinted({ records: 1, days: 0.5, bytes: 1536 })).toBe('1 records / 0.5 days / 1536 bytes');
  });
});
