import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TLSSocket } from 'node:tls';
import { fail, ok, type Result } from '../../../core/index.js';

/**
 * Headers on every web answer. The policy allows no script at all: escaping is what keeps
 * an agent's text from becoming markup, and the policy is the second wall behind it.
 */
const PAGE_HEADERS: Record<string, string> = {
  'content-security-policy': "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'same-origin',
  'cache-control': 'no-store',
};

export function sendHtml(res: ServerResponse, status: number, body: string, extra: Record<string, string | string[]> = {}): void {
  res.writeHead(status, { ...PAGE_HEADERS, 'content-type': 'text/html; charset=utf-8', ...extra });
  res.end(body);
}

export function redirect(res: ServerResponse, location: string, extra: Record<string, string | string[]> = {}): void {
  res.writeHead(303, { ...PAGE_HEADERS, location, ...extra });
  res.end();
}

export function sendCss(res: ServerResponse, css: string): void {
  res.writeHead(200, { 'content-type': 'text/css; charset=utf-8', 'cache-control': 'no-cache', 'x-content-type-options': 'nosniff' });
  res.end(css);
}

/**
 * Whether the browser reached us over https: TLS on this socket, or a TLS-terminating proxy
 * saying so in X-Forwarded-Proto. A browser's cross-site form cannot set that header, so
 * trusting it can only add `Secure` and make the origin check expect https.
 */
export function reachedOverHttps(req: IncomingMessage): boolean {
  if ((req.socket as Partial<TLSSocket>).encrypted === true) return true;
  const fwd = req.headers['x-forwarded-proto'];
  const first = (Array.isArray(fwd) ? fwd[0] : fwd)?.split(',')[0]?.trim().toLowerCase();
  return first === 'https';
}

export interface FormRefusal {
  status: 400 | 403 | 413 | 415;
  message: string;
}

const fatalUtf8 = new TextDecoder('utf-8', { fatal: true });

/** Read an `application/x-www-form-urlencoded` body, refusing anything past `maxBytes`. */
export async function readForm(req: IncomingMessage, maxBytes: number): Promise<{ ok: true; form: URLSearchParams } | ({ ok: false } & FormRefusal)> {
  const type = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
  if (type !== 'application/x-www-form-urlencoded') {
    req.resume();
    return { ok: false, status: 415, message: 'This form must be sent as application/x-www-form-urlencoded, as a browser sends it.' };
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) {
      req.resume();
      return { ok: false, status: 413, message: `The form is larger than ${maxBytes} bytes; a directive's text is at most 65,536 bytes.` };
    }
    chunks.push(chunk);
  }
  const form = decodeForm(Buffer.concat(chunks));
  if (form === null) return { ok: false, status: 400, message: 'The form is not valid UTF-8, which every browser sends; reload the page and submit it again.' };
  return { ok: true, form };
}

const PERCENT = 0x25;
const PLUS = 0x2b;

/**
 * Decode a urlencoded body as URLSearchParams does, except that a name or value whose bytes,
 * raw or percent-escaped (`%FF`), are not UTF-8 refuses the whole form: URLSearchParams would
 * store U+FFFD in their place and the Hub would send a message nobody wrote.
 */
export function decodeForm(body: Buffer): URLSearchParams | null {
  const form = new URLSearchParams();
  for (const pair of splitBytes(body, 0x26)) {
    if (pair.length === 0) continue;
    const eq = pair.indexOf(0x3d);
    const name = decodeComponent(eq === -1 ? pair : pair.subarray(0, eq));
    const value = decodeComponent(eq === -1 ? Buffer.alloc(0) : pair.subarray(eq + 1));
    if (name === null || value === null) return null;
    form.append(name, value);
  }
  return form;
}

function splitBytes(buf: Buffer, sep: number): Buffer[] {
  const parts: Buffer[] = [];
  let start = 0;
  for (let i = buf.indexOf(sep); i !== -1; i = buf.indexOf(sep, start)) {
    parts.push(buf.subarray(start, i));
    start = i + 1;
  }
  parts.push(buf.subarray(start));
  return parts;
}

const hexValue = (byte: number | undefined): number => {
  if (byte === undefined) return -1;
  const c = byte | 0x20;
  if (byte >= 0x30 && byte <= 0x39) return byte - 0x30;
  if (c >= 0x61 && c <= 0x66) return c - 0x61 + 10;
  return -1;
};

/** `+` is a space and `%XX` a byte; a `%` not followed by two hex digits stays itself (the URL standard's rule). */
function decodeComponent(raw: Buffer): string | null {
  const out = Buffer.alloc(raw.length);
  let n = 0;
  for (let i = 0; i < raw.length; i++) {
    const byte = raw[i] as number;
    const hi = byte === PERCENT ? hexValue(raw[i + 1]) : -1;
    const lo = hi === -1 ? -1 : hexValue(raw[i + 2]);
    if (lo !== -1) {
      out[n++] = hi * 16 + lo;
      i += 2;
    } else out[n++] = byte === PLUS ? 0x20 : byte;
  }
  try {
    return fatalUtf8.decode(out.subarray(0, n));
  } catch {
    return null;
  }
}

/**
 * A POST must come from one of this Hub's own pages: its Origin (or, where a browser
 * sends none, its Referer) must be the origin the browser used to reach us.
 */
export function checkSameOrigin(req: IncomingMessage, secure: boolean): Result<void> {
  const host = req.headers.host;
  if (!host) return fail('the request names no Host');
  const own = `${secure ? 'https' : 'http'}://${host}`.toLowerCase();
  const origin = req.headers.origin;
  if (origin !== undefined) {
    return origin.toLowerCase() === own ? ok(undefined) : fail(`it came from ${origin}, not from ${own}`);
  }
  const referer = req.headers.referer;
  if (referer !== undefined) {
    return referer.toLowerCase().startsWith(own + '/') ? ok(undefined) : fail(`it came from a page outside ${own}`);
  }
  return fail('the browser said neither where the form came from (Origin) nor which page sent it (Referer)');
}
