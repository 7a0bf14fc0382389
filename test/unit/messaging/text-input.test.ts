import { Readable, PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import type { CliIO } from '../../../src/cli/io.js';
import { fakeClock } from '../../../src/util/clock.js';
import { readMessageText } from '../../../src/cli/messaging/text-input.js';

function io(stdin: string | null): CliIO {
  const input = stdin === null ? Object.assign(new PassThrough(), { isTTY: true }) : Readable.from([Buffer.from(stdin, 'utf8')]);
  return {
    stdout: new PassThrough(),
    stderr: new PassThrough(),
    stdin: input,
    env: {},
    cwd: '/',
    clock: fakeClock(),
    self: { execPath: process.execPath, args: [] },
    pid: 1,
  };
}

describe('readMessageText', () => {
  it('takes the argument as it is', async () => {
    expect(await readMessageText('  hi there\n', io(null), 'oh-hai send')).toEqual({ ok: true, value: '  hi there\n' });
  });

  it('reads stdin for `-` and drops exactly one trailing newline', async () => {
    expect(await readMessageText('-', io('line one\nline two\n\n'), 'oh-hai send')).toEqual({ ok: true, value: 'line one\nline two\n' });
    expect(await readMessageText('-', io('crlf\r\n'), 'oh-hai send')).toEqual({ ok: true, value: 'crlf' });
  });

  it('reads piped stdin when no text argument is given', async () => {
    expect(await readMessageText(undefined, io('from a pipe\n'), 'oh-hai ask')).toEqual({ ok: true, value: 'from a pipe' });
  });

  it('refuses to wait on a terminal and says how to give the text', async () => {
    const r = await readMessageText(undefined, io(null), 'oh-hai task');
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.reason).toMatch(/oh-hai task needs a text: give it as the last argument, or pipe it on stdin/);
  });

  it('refuses empty text, naming where it came from', async () => {
    const fromStdin = await readMessageText('-', io('\n'), 'oh-hai send');
    expect(fromStdin.ok).toBe(false);
    if (!fromStdin.ok) expect(fromStdin.reason).toMatch(/stdin was empty/);
    const fromArg = await readMessageText('', io(null), 'oh-hai send');
    expect(fromArg.ok).toBe(false);
    if (!fromArg.ok) expect(fromArg.reason).toMatch(/the text is empty/);
  });

  it('refuses a text over 65,536 UTF-8 bytes, counting bytes not characters', async () => {
    const atLimit = 'é'.repeat(32_768);
    expect((await readMessageText(atLimit, io(null), 'oh-hai send')).ok).toBe(true);
    const over = await readMessageText(atLimit + 'x', io(null), 'oh-hai send');
    expect(over.ok).toBe(false);
    if (!over.ok) expect(over.reason).toMatch(/65537 bytes of UTF-8; a message may carry at most 65536/);
  });
});
