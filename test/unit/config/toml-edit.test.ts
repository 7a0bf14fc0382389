import { parse } from 'smol-toml';
import { describe, expect, it } from 'vitest';
import { insertTableKey, tomlString } from '../../../src/config/index.js';

const LIST = ['agent:a', 'agent:b'];
const LIST_TEXT = '[\n  "agent:a", # first\n  "agent:b",\n]';

const insert = (text: string) =>
  insertTableKey({ text, doc: parse(text) as Record<string, unknown>, file: '/u/config.toml' }, 'bridge', 'allow_from', LIST, LIST_TEXT, ['why']);

describe('tomlString', () => {
  it.each([
    ['agent:agt_1', '"agent:agt_1"'],
    [`agent:o'brien`, `"agent:o'brien"`],
    ['agent:say"hi"', `'agent:say"hi"'`],
    ['agent:back\\slash', `'agent:back\\slash'`],
    [`agent:it's\\`, `"agent:it's\\\\"`],
    ['agent:ünï', '"agent:ünï"'],
  ])('quotes %j as %s, which reads back as itself', (s, quoted) => {
    expect(tomlString(s)).toBe(quoted);
    expect(parse(`v = ${quoted}`).v).toBe(s);
  });
});

describe('insertTableKey', () => {
  it('appends a [bridge] table to a file without one, keeping every comment and line as it was', () => {
    const text = '# my settings\n[hub]\nurl = "https://h.example" # the hub\n';
    const r = insert(text);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.value.startsWith(text)).toBe(true);
    expect(r.value.slice(text.length)).toBe(`\n[bridge]\n# why\nallow_from = ${LIST_TEXT}\n`);
  });

  it('writes into an empty file and into one without a final newline', () => {
    const empty = insert('');
    expect(empty.ok && empty.value).toBe(`[bridge]\n# why\nallow_from = ${LIST_TEXT}\n`);
    const noNewline = insert('[hub]\nurl = "https://h.example"');
    expect(noNewline.ok && parse(noNewline.value)).toEqual({ hub: { url: 'https://h.example' }, bridge: { allow_from: LIST } });
  });

  it('inserts right under an existing [bridge] header, leaving the other keys and tables in place', () => {
    const text = '[bridge] # mine\nwait_seconds = 30 # short\n\n[hub]\nurl = "https://h.example"\n';
    const r = insert(text);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.value).toBe(`[bridge] # mine\n# why\nallow_from = ${LIST_TEXT}\nwait_seconds = 30 # short\n\n[hub]\nurl = "https://h.example"\n`);
  });

  it('keeps CRLF line endings', () => {
    const r = insert('[bridge]\r\nwait_seconds = 30\r\n');
    expect(r.ok).toBe(true);
    if (r.ok) expect(r.value.replace(/\r\n/g, '')).not.toContain('\n');
  });

  it('writes a dotted key before the first header when [bridge] exists only as dotted keys', () => {
    const text = 'bridge.wait_seconds = 30\n[hub]\nurl = "https://h.example"\n';
    const r = insert(text);
    expect(r.ok).toBe(true);
    if (r.ok) expect(parse(r.value)).toEqual({ bridge: { wait_seconds: 30, allow_from: LIST }, hub: { url: 'https://h.example' } });
  });

  it('refuses, writing nothing, when [bridge] is an inline table', () => {
    const r = insert('bridge = { wait_seconds = 30 }\n');
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.error).toMatchObject({ exit: 2, code: 'config_edit_refused' });
    expect(r.error.message).toContain('nothing was written');
    expect(r.error.message).toContain('under [bridge] in /u/config.toml by hand');
  });

  it('refuses when the only "[bridge]" line sits inside a multi-line string', () => {
    const text = 'note = """\n[bridge]\n"""\nbridge.wait_seconds = 1\n';
    const r = insert(text);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error.message).toContain('did not read back as written');
  });
});
