import type { CliIO } from '../io.js';
import { badTokenReason } from '../../config/index.js';
import { usageFailure, type Coded } from '../../core/index.js';

/** Far past any real token; stops `--token-stdin < /dev/urandom` from eating memory. */
const MAX_STDIN_BYTES = 64 * 1024;

type Stdin = CliIO['stdin'] & { setRawMode?: (raw: boolean) => unknown };

const interrupted = { code: 'interrupted', message: 'interrupted; nothing was stored', exit: 130 };

async function readAllCapped(stream: NodeJS.ReadableStream): Promise<Buffer | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream) {
    const buf = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : Buffer.from(chunk);
    size += buf.length;
    if (size > MAX_STDIN_BYTES) return null;
    chunks.push(buf);
  }
  return Buffer.concat(chunks);
}

/**
 * Read one line from a terminal with echo off: raw mode, so the characters typed or pasted
 * are never shown. Backspace edits; Ctrl-C or Ctrl-D on an empty line cancels.
 */
export function promptSecret(io: CliIO, question: string): Promise<Coded<string>> {
  const stdin = io.stdin as Stdin;
  return new Promise((resolve) => {
    let value = '';
    const finish = (result: Coded<string>) => {
      stdin.removeListener('data', onData);
      stdin.setRawMode?.(false);
      stdin.pause();
      io.stderr.write('\n');
      resolve(result);
    };
    const onData = (chunk: Buffer | string) => {
      for (const ch of typeof chunk === 'string' ? chunk : chunk.toString('utf8')) {
        if (ch === '\r' || ch === '\n') return finish({ ok: true, value });
        if (ch === '\u0003' || (ch === '\u0004' && value === '')) return finish({ ok: false, error: interrupted });
        if (ch === '\u007f' || ch === '\b') value = value.slice(0, -1);
        else if (ch >= ' ') value += ch;
      }
    };
    io.stderr.write(question);
    stdin.setRawMode?.(true);
    stdin.on('data', onData);
    stdin.resume();
  });
}

/** Read one visible line from a terminal (a Hub URL: not a secret). */
export function promptLine(io: CliIO, question: string): Promise<Coded<string>> {
  const stdin = io.stdin;
  return new Promise((resolve) => {
    let text = '';
    const finish = (result: Coded<string>) => {
      stdin.removeListener('data', onData);
      stdin.removeListener('end', onEnd);
      stdin.pause();
      resolve(result);
    };
    const onData = (chunk: Buffer | string) => {
      text += typeof chunk === 'string' ? chunk : chunk.toString('utf8');
      const nl = text.indexOf('\n');
      if (nl !== -1) finish({ ok: true, value: text.slice(0, nl).trim() });
    };
    const onEnd = () => finish({ ok: false, error: interrupted });
    io.stderr.write(question);
    stdin.on('data', onData);
    stdin.once('end', onEnd);
    stdin.resume();
  });
}

export const canPrompt = (io: CliIO): boolean => io.stdin.isTTY === true && typeof (io.stdin as Stdin).setRawMode === 'function';

/**
 * The token to log in with: from stdin with `--token-stdin` (a file or a pipe), or typed at
 * an echo-off prompt on a terminal. Never from a flag value, which would land in shell
 * history and in every process listing. Without a terminal and without --token-stdin it
 * refuses rather than wait on a pipe nobody writes to.
 */
export async function readToken(io: CliIO, opts: { tokenStdin: boolean; command: string; what: string }): Promise<Coded<string>> {
  let raw: string;
  if (canPrompt(io)) {
    const typed = await promptSecret(io, `Paste ${opts.what} (input is hidden): `);
    if (!typed.ok) return typed;
    raw = typed.value;
  } else if (opts.tokenStdin) {
    const bytes = await readAllCapped(io.stdin);
    if (bytes === null) return usageFailure('invalid_token', `--token-stdin: stdin is over ${MAX_STDIN_BYTES} bytes; it must hold one token`);
    raw = bytes.toString('utf8');
  } else {
    return usageFailure(
      'no_token',
      `no terminal to prompt on: pass the token on stdin with --token-stdin (e.g. \`${opts.command} --token-stdin < token-file\`); a token is never taken as a flag value`,
    );
  }
  const token = raw.trim();
  const problem = badTokenReason(token);
  if (problem)
    return usageFailure('invalid_token', `the token read ${canPrompt(io) ? 'at the prompt' : 'from stdin'} is unusable because ${problem}; nothing was stored`);
  return { ok: true, value: token };
}
