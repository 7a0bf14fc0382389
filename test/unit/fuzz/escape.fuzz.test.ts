import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { escapeUnsafe, escapeUnsafeLines, quoteJson } from '../../../src/util/escape.js';
import { fuzzParameters } from '../../helpers/fuzz.js';

/** The one escaping function: nothing a terminal acts on survives it, and a JSON text keeps its value. */
const RAW_UNSAFE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c\ufeff]/;
const hostile = fc.string({
  unit: fc.oneof(
    fc.constantFrom('\u001b', '\u009b', '\u0085', '\u202e', '\u2066', '\u2028', '\n', '\r', '\t', '\u0007', '\\', '"', '\ud83d', '\ude00', '\ud83d\ude00', 'é'),
    fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }),
  ),
});

describe('escapeUnsafe (fuzzed)', () => {
  it('leaves no control, C1, separator or bidi character; inside JSON the value is unchanged; escaping twice changes nothing', () => {
    fc.assert(
      fc.property(hostile, (s) => {
        const once = escapeUnsafe(s);
        expect(RAW_UNSAFE.test(once)).toBe(false);
        expect(escapeUnsafe(once)).toBe(once);
        expect(JSON.parse(escapeUnsafe(JSON.stringify(s)))).toBe(s);
        // The verbatim shortcut for clean text quotes exactly as the two passes do.
        expect(quoteJson(s)).toBe(escapeUnsafe(JSON.stringify(s)));
        expect(quoteJson(`plain ${s.replace(/[^ -~]/g, '')}`)).toBe(escapeUnsafe(JSON.stringify(`plain ${s.replace(/[^ -~]/g, '')}`)));
        const lines = escapeUnsafeLines(s);
        expect(lines.split(/[\n\t]/).some((part) => RAW_UNSAFE.test(part))).toBe(false);
        // The clean-text shortcut changes nothing: every line and every tab-separated cell escaped on its own.
        expect(lines).toBe(
          s
            .split('\n')
            .map((line) => line.split('\t').map(escapeUnsafe).join('\t'))
            .join('\n'),
        );
      }),
      fuzzParameters(0xe5c, 500),
    );
  });
});
