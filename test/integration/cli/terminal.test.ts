import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runOhHai } from '../../helpers/cli.js';
import { tempEnv, type TempEnv } from '../../helpers/env.js';
import { hasScript, plainText, runOnPty } from '../../helpers/pty.js';

/** The terminal side of the CLI (docs/terminal.md) under a real pseudo-terminal; a pipe keeps its plain bytes. */
const pty = hasScript();
if (!pty) console.warn('terminal.test.ts: `script` (util-linux) is not installed, so the pseudo-terminal tests cannot run');

let t: TempEnv;
afterEach(() => t?.cleanup());

const RED_FATAL = '\x1b[31mFATAL\x1b[39m';
/** A long FATAL line that needs no Hub (none is configured). */
const BAD = ['session', 'status'];

describe.runIf(pty)('on a terminal', () => {
  it('the exit table is aligned, not tab-separated', async () => {
    t = tempEnv();
    const r = await runOnPty(['bridge', '--exit-codes'], { env: t.env, cols: 400 });
    expect(r.code).toBe(0);
    const lines = plainText(r.tty).trimEnd().split('\n');
    expect(lines.some((l) => l.includes('\t'))).toBe(false);
    expect(lines[0]).toMatch(/^exit {5}meaning {2,}what to do$/);
    // Every row's meaning starts in the same column.
    const column = lines[0]!.indexOf('meaning');
    expect(lines[1]!.slice(column)).toMatch(/^your mail was printed/);
    expect(lines.at(-1)!.slice(column)).toMatch(/^killed from outside/);
  });

  it('wraps the exit table inside its columns on a narrow terminal', async () => {
    t = tempEnv();
    const r = await runOnPty(['bridge', '--exit-codes'], { env: t.env, cols: 70 });
    const lines = plainText(r.tty).trimEnd().split('\n');
    expect(lines.every((l) => l.length <= 70)).toBe(true);
    expect(plainText(r.tty)).toContain('what to do');
  });

  it('FATAL is red, and a long line wraps at the width with a hanging indent, never inside a word', async () => {
    t = tempEnv();
    const r = await runOnPty(BAD, { env: t.env, cols: 60 });
    expect(r.code).toBe(2);
    expect(r.tty).toContain(`oh-hai session status: ${RED_FATAL} (exit 2, no_hub_url)`);
    const lines = plainText(r.tty).trimEnd().split('\n');
    expect(lines.length).toBeGreaterThan(2);
    expect(lines.every((l) => l.length <= 60)).toBe(true);
    expect(lines.slice(1).every((l) => l.startsWith('  '))).toBe(true);
    expect(lines.map((l) => l.trim()).join(' ')).toContain('no Hub URL is configured: pass --hub <url>, export MA2H_HUB_URL=<url>, or run');
  });

  it('NO_COLOR turns colour off (wrapping stays)', async () => {
    t = tempEnv({ NO_COLOR: '1' });
    const r = await runOnPty(BAD, { env: t.env, cols: 60 });
    expect(r.tty).not.toContain('\x1b[');
    expect(plainText(r.tty).trimEnd().split('\n').length).toBeGreaterThan(2);
  });

  it('TERM=dumb turns colour off', async () => {
    t = tempEnv({ TERM: 'dumb' });
    const r = await runOnPty(BAD, { env: t.env, cols: 60 });
    expect(r.tty).not.toContain('\x1b[');
  });

  it('stdout to a file while stderr is the terminal: the file gets the plain tab-separated table', async () => {
    t = tempEnv();
    const file = path.join(t.root, 'out.txt');
    const r = await runOnPty(['bridge', '--exit-codes'], { env: t.env, redirect: `> '${file}'` });
    expect(r.code).toBe(0);
    const out = readFileSync(file, 'utf8');
    expect(out.split('\n')[0]).toBe('exit\tmeaning\twhat to do');
    expect(out).not.toContain('\x1b');
  });
});

describe('in a pipe', () => {
  it('no colour and no wrapping', async () => {
    t = tempEnv();
    const r = await runOhHai(BAD, { env: t.env });
    expect(r.stderr).not.toContain('\x1b');
    expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
  });
  it('FORCE_COLOR colours it (and still neither wraps nor aligns)', async () => {
    t = tempEnv({ FORCE_COLOR: '1' });
    const r = await runOhHai(BAD, { env: t.env });
    expect(r.stderr).toContain(RED_FATAL);
    expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
  });
});
