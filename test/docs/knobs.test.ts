import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { KNOBS, SETTING_KNOBS, settingOf, type KnobName } from '../../src/core/index.js';
import { processIO } from '../../src/cli/io.js';
import { buildProgram } from '../../src/cli/main.js';
import { commandOptions, findCommand } from '../../src/cli/man/generate.js';

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

describe("a setting knob's flag, as the man pages and docs/config.md name it", () => {
  it('is an option of every command that reads the knob and takes flags (the bridge first)', async () => {
    const program = await buildProgram(processIO(), () => undefined);
    const bridge = findCommand(program, 'bridge');
    const longs = new Set(commandOptions(bridge!).map((o) => o.long));
    for (const k of SETTING_KNOBS) {
      const flag = settingOf(k).flag;
      if (flag !== null) expect(longs.has(flag), `${flag} (${KNOBS[k].env}) is named as a flag, and oh-hai bridge does not take it`).toBe(true);
    }
  });
});
