import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import type { CliIO } from '../../../src/cli/io.js';
import { readToken } from '../../../src/cli/account/token-input.js';
import { fakeClock } from '../../../src/util/clock.js';

function terminal(isTTY: boolean) {
  const stdin = new PassThrough() as PassThrough & { isTTY?: boolean; setRawMode?: (raw: boolean) => void };
  const raw: boolean[] = [];
  if (isTTY) {
    stdin.isTTY = true;
    stdin.setRawMode = (r: boolean) => void raw.push(r);
  }
  let err = '';
  const stderr = new PassThrough();
  stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
  const io: CliIO = { stdin, stdout: new PassThrough(), stderr, env: {}, cwd: '/', clock: fakeClock(), self: { execPath: '', args: [] }, pid: 1 };
  return { io, stdin, raw, err: () => err };
}

const opts = { tokenStdin: false, command: 'oh-hai login', what: 'the agent token' };

describe('readToken on a terminal', () => {
  it('reads in raw mode (echo off), handles backspace, and restores the terminal', async () => {
    const { io, stdin, raw, err } = terminal(true);
    const token = readToken(io, opts);
    stdin.write('tok_ab');
    stdin.write('X\u007f');
    stdin.write('c\r');
    expect(await token).toEqual({ ok: true, value: 'tok_abc' });
    expect(raw).toEqual([true, false]);
    expect(err()).toBe('Paste the agent token (input is hidden): \n');
  });

  it('prompts even with --token-stdin when stdin is a terminal, so the token is never echoed', async () => {
    const { io, stdin, raw } = terminal(true);
    const token = readToken(io, { ...opts, tokenStdin: true });
    stdin.write('tok\n');
    expect(await token).toEqual({ ok: true, value: 'tok' });
    expect(raw[0]).toBe(true);
  });

  it('Ctrl-C cancels with 130 and stores nothing', async () => {
    const { io, stdin, raw } = terminal(true);
    const token = readToken(io, opts);
    stdin.write('tok\u0003');
    expect(await token).toMatchObject({ ok: false, error: { exit: 130, code: 'interrupted' } });
    expect(raw).toEqual([true, false]);
  });
});

describe('readToken without a terminal', () => {
  it('reads stdin with --token-stdin, trimming the newline', async () => {
    const { io, stdin } = terminal(false);
    const token = readToken(io, { ...opts, tokenStdin: true });
    stdin.end('tok_from_file\n');
    expect(await token).toEqual({ ok: true, value: 'tok_from_file' });
  });

  it('refuses two tokens, or none, naming the flag', async () => {
    const two = terminal(false);
    const p = readToken(two.io, { ...opts, tokenStdin: true });
    two.stdin.end('tok_a tok_b\n');
    expect(await p).toMatchObject({ ok: false, error: { exit: 2, code: 'invalid_token' } });
    expect(await readToken(terminal(false).io, opts)).toMatchObject({ ok: false, error: { exit: 2, code: 'no_token' } });
  });
});
