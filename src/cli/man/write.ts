import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { BRIDGE_EXIT_TABLE } from '../../core/index.js';
import { processIO } from '../io.js';
import { buildProgram } from '../main.js';
import { VERSION } from '../version.js';
import { renderPages } from './generate.js';
import { PAGES } from './pages.js';
import { exitTableMarkdown, replaceGenerated } from './readme.js';

/**
 * `npm run man`: regenerate man/*.1, man/*.5 and the README's exit table from the command
 * definitions and src/core/exit.ts. The generated files are committed; test/docs/man.test.ts
 * fails when they are stale.
 */
const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

const program = await buildProgram(processIO(), () => undefined);
for (const page of renderPages(program, PAGES, VERSION)) {
  writeFileSync(path.join(repoRoot, 'man', page.file), page.text);
  process.stdout.write(`wrote man/${page.file}\n`);
}
const readme = path.join(repoRoot, 'README.md');
writeFileSync(readme, replaceGenerated(readFileSync(readme, 'utf8'), 'exit-table', exitTableMarkdown(BRIDGE_EXIT_TABLE)));
process.stdout.write('wrote the exit table in README.md\n');
