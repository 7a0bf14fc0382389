import { describe, expect, it } from 'vitest';
import { DEFAULT_RETAIN_PRINTED, parseRetainPrinted, resolveSettings } from '../../../src/config/index.js';

describe('[bridge] retain_printed', () => {
  it.each([
    ['10000 records / 7 days', { records: 10000, days: 7 }],
    ['500 records', { records: 500, days: 7 }],
    ['1.5 days', { records: 10000, days: 1.5 }],
    ['0 records/ 0 days', { records: 0, days: 0 }],
    ['1 record / 1 day', { records: 1, days: 1 }],
  ])('%s', (text, want) => {
    expect(parseRetainPrinted(text, 'x')).toEqual({ ok: true, value: want });
  });

  it.each([['7d'], ['-1 records'], ['1.5 records'], ['3 records / 4 records'], [''], [7]])('refuses %j with exit 2, naming where and the syntax', (bad) => {
    const r = parseRetainPrinted(bad, 'OH_HAI_RETAIN_PRINTED');
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.error.exit).toBe(2);
      expect(r.error.message).toMatch(/^OH_HAI_RETAIN_PRINTED must be a string such as "10000 records \/ 7 days"/);
    }
  });

  it('resolves environment over the user file over the default', () => {
    const loaded = (retainPrinted?: { records: number; days: number }) => ({
      user: { path: '/u/config.toml', settings: { numbers: {}, ...(retainPrinted ? { retainPrinted } : {}) } },
      project: null,
      warnings: [],
    });
    const resolve = (env: NodeJS.ProcessEnv, file?: { records: number; days: number }) => {
      const r = resolveSettings({ flags: {}, env, loaded: loaded(file) as never });
      if (!r.ok) throw new Error(r.error.message);
      return r.value.bridge.retainPrinted;
    };
    expect(resolve({})).toEqual(DEFAULT_RETAIN_PRINTED);
    expect(resolve({}, { records: 5, days: 1 })).toEqual({ records: 5, days: 1 });
    expect(resolve({ OH_HAI_RETAIN_PRINTED: '9 records' }, { records: 5, days: 1 })).toEqual({ records: 9, days: 7 });
  });
});
