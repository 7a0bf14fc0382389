import { describe, expect, it } from 'vitest';
import {
  alignRows,
  colorWanted,
  formatTable,
  highlightLine,
  PLAIN,
  StatusLine,
  terminalFacts,
  wrapLine,
  type Ticker,
} from '../../../src/cli/terminal/index.js';

const ESC = '\x1b';

describe('colour: on a terminal, off in pipes, NO_COLOR and TERM=dumb; FORCE_COLOR wins', () => {
  const cases: [boolean, NodeJS.ProcessEnv, boolean][] = [
    [true, {}, true],
    [false, {}, false],
    [true, { NO_COLOR: '1' }, false],
    // no-color.org: an empty NO_COLOR does not count.
    [true, { NO_COLOR: '' }, true],
    [true, { TERM: 'dumb' }, false],
    [false, { FORCE_COLOR: '1' }, true],
    [true, { FORCE_COLOR: '1', NO_COLOR: '1' }, true],
    [true, { FORCE_COLOR: '0' }, false],
    [true, { FORCE_COLOR: 'false' }, false],
  ];
  for (const [tty, env, want] of cases) {
    it(`tty=${tty} ${JSON.stringify(env)} → ${want}`, () => expect(colorWanted(tty, env)).toBe(want));
  }
  it('a pipe has no width', () => expect(terminalFacts(false, 80, {}).columns).toBeNull());
});

describe('wrapLine', () => {
  it('leaves a short line alone', () => expect(wrapLine('oh-hai bridge: hello', 40)).toBe('oh-hai bridge: hello'));
  it('wraps at spaces with a two-space hanging indent, never breaking a word', () => {
    const long = 'oh-hai bridge: lease — sess_0123456789abcdef expires 2026-12-01T10:00:00Z (Hub clock)';
    const wrapped = wrapLine(long, 30).split('\n');
    expect(wrapped.every((l) => l.length <= 30)).toBe(true);
    expect(wrapped.slice(1).every((l) => l.startsWith('  '))).toBe(true);
    expect(wrapped.map((l) => l.trim()).join(' ')).toBe(long);
  });
  it('keeps a word longer than the width whole', () => {
    const url = 'https://hub.example.com/' + 'x'.repeat(50);
    expect(wrapLine(`see ${url} now`, 30).split('\n')).toEqual(['see', `  ${url}`, '  now']);
  });
  it("keeps an indented line's indent", () => {
    const wrapped = wrapLine('      fix: ' + 'word '.repeat(10).trim(), 24).split('\n');
    expect(wrapped[0]!.startsWith('      fix:')).toBe(true);
    expect(wrapped.slice(1).every((l) => l.startsWith('        '))).toBe(true);
  });
});

describe('formatTable', () => {
  const rows = [
    ['exit', 'meaning'],
    ['0', 'ok'],
    ['13', 'the Hub is unreachable'],
  ];
  it('is tab-separated in a pipe', () => expect(formatTable(rows, PLAIN)).toBe('exit\tmeaning\n0\tok\n13\tthe Hub is unreachable\n'));
  it('is aligned on a terminal', () => {
    expect(formatTable(rows, { tty: true, color: true, columns: 80 })).toBe('exit  meaning\n0     ok\n13    the Hub is unreachable\n');
  });
  it('wraps the wide cells inside their column when the terminal is narrower than a row', () => {
    const wide = [
      ['a', 'b', 'c'],
      ['1', 'one two three four five six', 'seven eight nine ten eleven'],
    ];
    const out = formatTable(wide, { tty: true, color: false, columns: 34 }).trimEnd().split('\n');
    expect(out.every((l) => l.length <= 34)).toBe(true);
    expect(out[1]).toMatch(/^1  one two three\s+seven eight$/);
    expect(out.length).toBeGreaterThan(2);
  });
  it('never breaks a word: each column is at least its longest word wide, and the rest wraps around it', () => {
    const ids = [
      ['id', 'text'],
      ['msg_0123456789abcdef', 'a b c d e f g h i j k l m n o p'],
    ];
    const out = formatTable(ids, { tty: true, color: false, columns: 34 }).trimEnd().split('\n');
    expect(out[1]).toBe('msg_0123456789abcdef  a b c d e f');
    expect(out.slice(2).every((l) => l.startsWith(' '.repeat(22)) && l.length <= 34)).toBe(true);
    // Narrower than the longest word: a long line, not a broken id.
    expect(formatTable(ids, { tty: true, color: false, columns: 12 })).toContain('msg_0123456789abcdef');
  });
  it('alignRows: a line break in a cell starts a new line inside its column, every row in the same columns', () => {
    expect(
      alignRows(
        [
          ['warn', 'policy', 'none declared\nfix: declare one'],
          ['pass', 'hub', 'answered'],
        ],
        null,
      ),
    ).toEqual([['warn  policy  none declared', '              fix: declare one'], ['pass  hub     answered']]);
  });
});

describe('highlightLine paints only the CLI’s own markers', () => {
  it('FATAL red', () =>
    expect(highlightLine('oh-hai send: FATAL (exit 2, bad_address) — x')).toBe(`oh-hai send: ${ESC}[31mFATAL${ESC}[39m (exit 2, bad_address) — x`));
  it('⚠️ lines yellow from the sign on', () =>
    expect(highlightLine('oh-hai bridge: ⚠️ lease lapsed')).toBe(`oh-hai bridge: ${ESC}[33m⚠️ lease lapsed${ESC}[39m`));
  it('doctor columns', () => {
    expect(highlightLine('pass  node   v20')).toBe(`${ESC}[32mpass${ESC}[39m  node   v20`);
    expect(highlightLine('fail  hub    down')).toBe(`${ESC}[31mfail${ESC}[39m  hub    down`);
    expect(highlightLine('warn  clock  off')).toBe(`${ESC}[33mwarn${ESC}[39m  clock  off`);
  });
  it('a message that merely mentions FATAL is left alone', () =>
    expect(highlightLine('[from agent:x] FATAL (exit 3) is a joke')).toBe('[from agent:x] FATAL (exit 3) is a joke'));
});

describe('StatusLine', () => {
  function harness() {
    let tick: (() => void) | null = null;
    const ticker: Ticker = {
      every: (_ms, fn) => {
        tick = fn;
        return () => (tick = null);
      },
    };
    const written: string[] = [];
    const line = new StatusLine({ write: (t: string) => written.push(t) }, ticker, () => 20);
    return { line, written, tick: () => tick?.(), ticking: () => tick !== null };
  }
  it('draws, redraws on every tick, erases before a write and draws again below it', () => {
    const h = harness();
    let n = 0;
    h.line.start(() => `waiting ${++n}`);
    h.tick();
    expect(h.written).toEqual(['\r\x1b[Kwaiting 1', '\r\x1b[Kwaiting 2']);
    h.line.suspend();
    h.line.resume(true);
    expect(h.written.slice(2)).toEqual(['\r\x1b[K', '\r\x1b[Kwaiting 3']);
  });
  it('is not drawn again below a partial line (a prompt)', () => {
    const h = harness();
    h.line.start(() => 'waiting');
    h.line.suspend();
    h.line.resume(false);
    expect(h.written).toEqual(['\r\x1b[Kwaiting', '\r\x1b[K']);
  });
  it('fits one row: a longer text is cut with an ellipsis', () => {
    const h = harness();
    h.line.start(() => 'x'.repeat(40));
    expect(h.written[0]).toBe('\r\x1b[K' + 'x'.repeat(18) + '…');
  });
  it('stop erases it and stops the ticks', () => {
    const h = harness();
    h.line.start(() => 'waiting');
    h.line.stop();
    expect(h.written).toEqual(['\r\x1b[Kwaiting', '\r\x1b[K']);
    expect(h.ticking()).toBe(false);
    h.line.resume(true);
    expect(h.written).toHaveLength(2);
  });
});
