import type { CliIO } from '../io.js';
import { MAX_TEXT_BYTES } from '../../hub/contract/index.js';
import { fail, ok, type Result } from '../../core/index.js';

async function readAll(stream: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : Buffer.from(chunk));
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * The text of a send or reply: the argument, or stdin when the argument is `-` or absent
 * and stdin is not a terminal. One trailing newline from stdin is dropped — `echo hi |`
 * means "hi" — and nothing else is touched.
 */
export async function readMessageText(arg: string | undefined, io: CliIO, command: string): Promise<Result<string>> {
  let text: string;
  if (arg !== undefined && arg !== '-') {
    text = arg;
  } else if (arg === undefined && io.stdin.isTTY) {
    return fail(`${command} needs a text: give it as the last argument, or pipe it on stdin (e.g. \`echo hello | ${command} …\`, or \`-\` as the text)`);
  } else {
    text = (await readAll(io.stdin)).replace(/\r?\n$/, '');
  }
  if (text.length === 0) {
    return fail(
      arg === undefined || arg === '-' ? 'stdin was empty; pipe the text in, or give it as the last argument' : 'the text is empty; say what you want',
    );
  }
  return checkTextSize(text);
}

/** Checked here, not left to the Hub's text_too_long, so the fix names the input. */
export function checkTextSize(text: string): Result<string> {
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > MAX_TEXT_BYTES) {
    return fail(`the text is ${bytes} bytes of UTF-8; a message may carry at most ${MAX_TEXT_BYTES} (MA2H §7) — shorten it or send it in parts`);
  }
  return ok(text);
}
