import { describe, expect, it } from 'vitest';
import { MESSAGE } from '../../../src/cli/json/outputs.js';
import { arrayOf, checkShape, f, fieldRows, int, nullable, object, str } from '../../../src/cli/json/shape.js';

const ROW = object('Row', [f('id', str, 'the id'), f('n', nullable(int), 'a count'), f('note', str, 'optional', true)]);

describe('the --json shape checker', () => {
  it('accepts a conforming document, optional fields absent and nullable ones null', () => {
    expect(
      checkShape(
        [
          { id: 'a', n: 1 },
          { id: 'b', n: null, note: 'x' },
        ],
        arrayOf(ROW),
      ),
    ).toEqual([]);
  });

  it('names every undocumented, missing or mistyped field by its path', () => {
    expect(checkShape([{ id: 'a', n: 1.5, extra: true }, { n: 1 }], arrayOf(ROW))).toEqual([
      '$[0].extra: not a documented field of Row',
      '$[0].n: expected an integer, got 1.5',
      '$[1].id: missing (documented as always present)',
    ]);
    expect(checkShape({ id: 'a', n: 1 }, arrayOf(ROW))).toEqual(['$: expected an array, got {"id":"a","n":1}']);
  });

  it('renders fields as man page rows, nested objects by dotted path', () => {
    const rows = fieldRows(MESSAGE).map(([k]) => k);
    expect(rows).toContain('id (string)');
    expect(rows).toContain('destination.snapshot ("online"|"offline"|"unknown")');
    expect(rows).toContain('prior ("queued"|"delivered"|null)');
  });
});
