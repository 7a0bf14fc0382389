import { type Coded, done, usageFailure } from '../core/index.js';

/**
 * Parse a Hub URL into its origin (`https://hub.example`, no trailing slash). MA2H paths are
 * absolute (`/v1/…`), and the origin keys the credentials, the identity cache and the state
 * entry, so a path, query or fragment is refused rather than silently dropped; user:password
 * is refused because a secret never goes in a URL.
 */
export function parseHubUrl(raw: string, where: string): Coded<string> {
  const fix = `set it to the Hub's origin, e.g. https://hub.example.com`;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return usageFailure('invalid_hub_url', `${where}: ${JSON.stringify(raw)} is not a URL; ${fix}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    return usageFailure('invalid_hub_url', `${where}: ${JSON.stringify(raw)} must be http:// or https://; ${fix}`);
  if (url.username || url.password)
    return usageFailure(
      'invalid_hub_url',
      `${where}: the Hub URL carries a user name or password; secrets never go in a URL — ${fix} and log in with \`oh-hai login --token-stdin\``,
    );
  if ((url.pathname !== '/' && url.pathname !== '') || url.search || url.hash)
    return usageFailure('invalid_hub_url', `${where}: ${JSON.stringify(raw)} has a path, query or fragment; MA2H paths are absolute (/v1/…), so ${fix}`);
  return done(url.origin);
}

const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);

/** A bearer sent over plain http to another machine can be read on the way: worth a warning, not a refusal. */
export function plainHttpWarning(origin: string): string | null {
  const url = new URL(origin);
  if (url.protocol !== 'http:' || LOOPBACK.has(url.hostname)) return null;
  return `the Hub URL ${origin} is plain http to another host: tokens travel unencrypted; use https://`;
}
