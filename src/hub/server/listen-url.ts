import { isIP } from 'node:net';
import type { NetworkInterfaceInfo } from 'node:os';

/**
 * The URLs of a listening server. A wildcard listen address (0.0.0.0, ::) means "every
 * interface": it is no address to connect to (Windows refuses it outright, browsers block or
 * misread it), so a URL built from it sends a user nowhere. Such a listen is reached at loopback
 * from this machine and at its interfaces' addresses from others.
 */

export const formatUrl = (host: string, port: number): string => `http://${host.includes(':') ? `[${host}]` : host}:${port}`;

/** 4 for 0.0.0.0, 6 for :: (in any spelling), null for an address or name that is not a wildcard. */
export function wildcardFamily(host: string): 4 | 6 | null {
  const family = isIP(host);
  if (family === 4) return host === '0.0.0.0' ? 4 : null;
  // The URL parser writes an IPv6 address canonically: '::0' and '0:0:0:0:0:0:0:0' are '[::]'.
  if (family === 6) return new URL(`http://[${host}]/`).hostname === '[::]' ? 6 : null;
  return null;
}

/** The URL this machine reaches a server listening on `host` at: loopback of the wildcard's family, else `host` itself. */
export function reachableUrl(host: string, port: number): string {
  const wildcard = wildcardFamily(host);
  return formatUrl(wildcard === 4 ? '127.0.0.1' : wildcard === 6 ? '::1' : host, port);
}

/** fe80::/10: usable only with a zone (`%eth0`), which a URL does not carry into every client. */
const linkLocal = (address: string): boolean => /^fe[89ab][0-9a-f]:/i.test(address);

/**
 * For a wildcard listen, the URLs another machine may use: each address of this machine's
 * interfaces that the listen covers — IPv4 for 0.0.0.0; both for :: (Node listens dual-stack) —
 * but loopback and link-local. Null when `host` is no wildcard: its own URL is the one to use.
 */
export function interfaceUrls(host: string, port: number, interfaces: NodeJS.Dict<NetworkInterfaceInfo[]>): string[] | null {
  const wildcard = wildcardFamily(host);
  if (wildcard === null) return null;
  const urls = Object.values(interfaces)
    .flatMap((infos) => infos ?? [])
    .filter((i) => !i.internal && (i.family === 'IPv4' || (wildcard === 6 && !linkLocal(i.address))))
    .map((i) => formatUrl(i.address, port));
  return [...new Set(urls)];
}
