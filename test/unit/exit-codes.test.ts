import { describe, expect, it } from 'vitest';
import { BRIDGE_EXIT_TABLE, EXIT, exitTableCells } from '../../src/core/exit.js';
import { formatTable, PLAIN } from '../../src/cli/terminal/index.js';

describe('exit-code table', () => {
  it('documents every contract code of the product doc, and never 1', () => {
    const codes = BRIDGE_EXIT_TABLE.map((r) => r.code);
    expect(codes).toEqual([0, 2, 3, 4, 10, 11, 12, 13, 14, 15, 130, 141, 143, '128 + N']);
    expect(codes).not.toContain(EXIT.internal);
  });
  it('formats one tab-separated row per code', () => {
    const lines = formatTable(exitTableCells(), PLAIN).trimEnd().split('\n');
    expect(lines[0]).toBe('exit\tmeaning\twhat to do');
    expect(lines).toHaveLength(BRIDGE_EXIT_TABLE.length + 1);
    expect(lines[9]).toMatch(/^14\ta human closed your session/);
  });
});
