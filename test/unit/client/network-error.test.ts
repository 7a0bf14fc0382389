import { describe, expect, it } from 'vitest';
import { describeNetworkError } from '../../../src/hub/client/http.js';

describe('describeNetworkError', () => {
  it('names each cause once, the first of an AggregateError, and the code when the text lacks it', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), { code: 'ECONNREFUSED' });
    const e = Object.assign(new Error('fetch failed', { cause: new AggregateError([refused, new Error('other')]) }), { code: 'UND_ERR_CONNECT' });
    expect(describeNetworkError(e)).toBe('fetch failed: connect ECONNREFUSED 127.0.0.1:9 (UND_ERR_CONNECT)');
  });

  it('a cause chain that loops ends (it used to spin forever)', () => {
    const a = new Error('a');
    const b = new Error('b', { cause: a });
    (a as { cause?: unknown }).cause = b;
    expect(describeNetworkError(a)).toBe('a: b');
    const self = new Error('self');
    (self as { cause?: unknown }).cause = self;
    expect(describeNetworkError(self)).toBe('self');
    const loop = new AggregateError([]);
    const inner = new Error('inner', { cause: loop });
    (loop as { errors: unknown[] }).errors = [inner];
    expect(describeNetworkError(new Error('outer', { cause: loop }))).toBe('outer: inner');
  });
});
