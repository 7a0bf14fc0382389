import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { processIO } from '../../src/cli/io.js';
import { buildProgram, VERSION } from '../../src/cli/main.js';
import { commandOptions, documentedOptions, findCommand, pageCommands, renderPages, unroff, visibleCommandPaths } from '../../src/cli/man/generate.js';
import { PAGES } from '../../src/cli/man/pages.js';
import { repoRoot } from '../helpers/cli.js';

const program = await buildProgram(processIO(), () => undefined);
const manDir = path.join(repoRoot, 'man');
const committed = (file: string): string => readFileSync(path.join(manDir, file), 'utf8');

describe('man pages', () => {
  it('are not stale: man/ is exactly what `npm run man` generates from the command definitions', () => {
    const pages = renderPages(program, PAGES, VERSION);
    expect(readdirSync(manDir).sort()).toEqual(pages.map((p) => p.file).sort());
    for (const p of pages) expect(committed(p.file), `man/${p.file} is stale: run npm run man and commit man/`).toBe(p.text);
  });

  it('document every visible command, each on exactly one page', () => {
    const documented = PAGES.flatMap((spec) => pageCommands(program, spec).map((c) => c.path));
    expect([...documented].sort()).toEqual(visibleCommandPaths(program).sort());
  });

  it('list in OPTIONS every flag commander knows for each command, and no flag it does not', () => {
    for (const spec of PAGES) {
      const file = `${spec.name}.${spec.section}`;
      const onPage = documentedOptions(committed(file));
      const cmds = pageCommands(program, spec);
      const expected = new Map<string, string[]>();
      if (spec.program) expected.set('', program.options.map((o) => o.long ?? o.flags).concat('--help'));
      for (const { path: p, cmd } of cmds) {
        // A page with a single command and no program section lists its flags with no subsection.
        const key = cmds.length === 1 && !spec.program ? '' : p;
        expected.set(
          key,
          commandOptions(cmd).map((o) => o.long ?? o.flags),
        );
      }
      const longOnly = (flags: string[]) => flags.filter((f) => f.startsWith('--')).sort();
      const seen = new Map([...onPage].map(([k, v]) => [k, longOnly(v)]));
      for (const [where, flags] of expected) {
        const label = `${file}: oh-hai ${where || (spec.program ? '' : cmds[0]?.path)}`;
        expect(seen.get(where) ?? [], label).toEqual(longOnly(flags));
        for (const f of seen.get(where) ?? []) {
          const cmd = where === '' ? (spec.program ? program : cmds[0]?.cmd) : findCommand(program, where);
          const known = f === '--help' || (cmd?.options.some((o) => o.long === f) ?? false);
          expect(known, `${label} documents ${f}, which commander does not know`).toBe(true);
        }
      }
      for (const where of seen.keys()) expect([...expected.keys()], `${file}: OPTIONS has a subsection for "${where}"`).toContain(where);
    }
  });

  it('are all installed by the package ("man" in package.json)', () => {
    const pkg = JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { man?: string[]; files?: string[]; scripts?: Record<string, string> };
    expect([...(pkg.man ?? [])].sort()).toEqual(PAGES.map((p) => `man/${p.name}.${p.section}`).sort());
    expect(pkg.files).toContain('man');
    expect(pkg.scripts?.man).toBeDefined();
  });

  it('document in ENVIRONMENT every OH_HAI_* and MA2H_* variable the code reads, and none it does not', () => {
    const read = new Set<string>();
    const walk = (dir: string) => {
      for (const e of readdirSync(dir, { withFileTypes: true })) {
        const p = path.join(dir, e.name);
        if (e.isDirectory()) walk(p);
        else if (/\.c?ts$/.test(e.name) && !p.includes(`${path.sep}man${path.sep}`)) {
          for (const m of readFileSync(p, 'utf8').matchAll(/\b(?:OH_HAI|MA2H)_[A-Z][A-Z_]*[A-Z]\b/g)) read.add(m[0]);
        }
      }
    };
    walk(path.join(repoRoot, 'src'));
    const documented = new Set(PAGES.flatMap((p) => (p.environment ?? []).map(([name]) => name)));
    for (const v of read) expect(documented, `${v} is read by src/ but on no man page's ENVIRONMENT`).toContain(v);
    for (const v of documented) {
      if (/^(OH_HAI|MA2H)_/.test(v)) expect(read, `${v} is documented but nothing in src/ reads it`).toContain(v);
    }
  });

  it('leave no `--flag` in src/cli that no command takes (a text naming one sends the user nowhere)', () => {
    // Not oh-hai's: a placeholder in a comment (man/generate.ts), and bench/bridge-latency.mjs's own flag.
    const taken = new Set<string>(['--help', '--long', '--trace']);
    const collect = (cmd: Command) => {
      for (const o of cmd.options) if (o.long) taken.add(o.long);
      for (const c of cmd.commands) collect(c);
    };
    collect(program);
    const named = new Map<string, string>();
    const walk = (dir: string) => {
      for (const e of readdirSync(dir, { withFileTypes: true })) {
        const p = path.join(dir, e.name);
        if (e.isDirectory()) walk(p);
        else if (/\.c?ts$/.test(e.name))
          for (const m of readFileSync(p, 'utf8').matchAll(/(?<![\w-])--[a-z][a-z0-9-]*[a-z0-9]/g)) named.set(m[0], path.relative(repoRoot, p));
      }
    };
    walk(path.join(repoRoot, 'src', 'cli'));
    expect([...named].filter(([flag]) => !taken.has(flag)).map(([flag, file]) => `${file} names ${flag}`)).toEqual([]);
  });

  it('put the bridge exit table in oh-hai-bridge(1) exactly as `oh-hai bridge --exit-codes` has it', () => {
    const text = committed('oh-hai-bridge.1');
    const exit = text.slice(text.indexOf('.SH EXIT STATUS'), text.indexOf('\n.SH ', text.indexOf('.SH EXIT STATUS') + 1));
    const codes = [...exit.matchAll(/^\.TP\n(.*)$/gm)].map((m) => unroff(m[1] ?? ''));
    expect(codes).toEqual(['0', '2', '3', '4', '10', '11', '12', '13', '14', '15', '130', '141', '143', '128 + N']);
  });

  const groff = spawnSync('groff', ['--version'], { encoding: 'utf8' });
  const noGroff = groff.status === 0 ? null : 'groff is not installed (Debian: groff-base; .ci/run installs it)';
  if (noGroff) console.log(`skipping the man page lint: ${noGroff}`);

  it.skipIf(noGroff !== null)('render without a single warning (groff -ww -man -Tutf8 -z)', () => {
    for (const p of PAGES) {
      const file = path.join(manDir, `${p.name}.${p.section}`);
      expect(existsSync(file), file).toBe(true);
      const r = spawnSync('groff', ['-ww', '-man', '-Tutf8', '-z', file], { encoding: 'utf8' });
      expect(r.status, r.stderr).toBe(0);
      expect(r.stderr, `groff warnings for ${file}`).toBe('');
    }
  });
});
