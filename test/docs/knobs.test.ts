import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { KNOBS, type KnobName } from '../../src/core/index.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** The rows of docs/internals.md's "Knobs" table (the section's first; the bench- and test-only tables follow it): variable → default cell. */
function documentedKnobs(): Map<string, string> {
  const text = readFileSync(path.join(repoRoot, 'docs/internals.md'), 'utf8');
  const section = text.slice(text.indexOf('## Knobs'), text.indexOf('\n## ', text.indexOf('## Knobs') + 1));
  const table = /(?:^\|.*\n)+/m.exec(section)?.[0] ?? '';
  const rows = new Map<string, string>();
  for (const m of table.matchAll(/^\| `(OH_HAI_[A-Z_]+)` *\| *([^|]*?) *\|/gm)) rows.set(m[1] ?? '', (m[2] ?? '').trim());
  return rows;
}

describe('the knob registry (src/core/knobs.ts) and docs/internals.md', () => {
  it('list the same variables with the same defaults', () => {
    const rows = documentedKnobs();
    const names = Object.keys(KNOBS) as KnobName[];
    expect([...rows.keys()].sort()).toEqual(names.map((n) => KNOBS[n].env).sort());
    for (const n of names) {
      const k = KNOBS[n];
      expect(rows.get(k.env), k.env).toBe(k.default === null ? '(none)' : String(k.default));
    }
  });
});
