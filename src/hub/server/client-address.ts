import type { IncomingMessage } from 'node:http';
import { BlockList, isIP } from 'node:net';

/**
 * Whose request it is: the peer's address, unless the operator said the Hub sits behind
 * proxies (`--trust-proxy <address|CIDR>,…`) and the peer is one of them; then the address
 * that proxy forwarded in X-Forwarded-For. Anyone can send an X-Forwarded-For header, so it
 * is believed only from the proxies named — otherwise a client picks its own address for the
 * logs and the sign-in throttle.
 */
export interface TrustedProxies {
  /** What the operator named, as given (for the start line). */
  shown: string;
  has(address: string): boolean;
}

/** `::ffff:10.0.0.1` (an IPv4 peer on a dual-stack socket) is 10.0.0.1. */
const plain = (address: string): string => (address.startsWith('::ffff:') && isIP(address.slice(7)) === 4 ? address.slice(7) : address);

/** Parse `--trust-proxy`: comma-separated addresses and CIDR ranges, IPv4 or IPv6. */
export function parseTrustProxy(raw: string): { ok: true; value: TrustedProxies } | { ok: false; reason: string } {
  const list = new BlockList();
  const items = raw
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (items.length === 0) return { ok: false, reason: 'names no address' };
  for (const item of items) {
    const [address, bits, extra] = item.split('/');
    const family = isIP(address ?? '');
    if (family === 0 || extra !== undefined) return { ok: false, reason: `${item} is not an IP address or CIDR range (e.g. 127.0.0.1, 10.0.0.0/8, ::1)` };
    const type = family === 4 ? 'ipv4' : 'ipv6';
    if (bits === undefined) {
      list.addAddress(address!, type);
      continue;
    }
    const prefix = Number(bits);
    if (!/^\d+$/.test(bits) || prefix > (family === 4 ? 32 : 128))
      return { ok: false, reason: `${item} has a prefix length outside 0–${family === 4 ? 32 : 128}` };
    list.addSubnet(address!, prefix, type);
  }
  return {
    ok: true,
    value: {
      shown: items.join(','),
      has: (address) => {
        const a = plain(address);
        const family = isIP(a);
        return family !== 0 && list.check(a, family === 4 ? 'ipv4' : 'ipv6');
      },
    },
  };
}

/**
 * The client's address for logs and rate limits. Behind trusted proxies, X-Forwarded-For is
 * read from the right (each proxy appends the address it was connected from), skipping the
 * trusted hops: the first address no trusted proxy vouches for is the client. Without
 * `--trust-proxy`, or from any other peer, it is the socket's peer address.
 */
export function clientAddress(req: IncomingMessage, trusted: TrustedProxies | null): string | null {
  const peer = req.socket.remoteAddress;
  if (peer === undefined) return null;
  if (trusted === null || !trusted.has(peer)) return plain(peer);
  const header = req.headers['x-forwarded-for'];
  const hops = (Array.isArray(header) ? header.join(',') : (header ?? ''))
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = hops[i]!;
    // A hop that is no address at all is a forged header's: believe nothing left of it.
    if (isIP(plain(hop)) === 0) return plain(peer);
    if (!trusted.has(hop)) return plain(hop);
  }
  // Every hop is a trusted proxy: the request started at the first one.
  return hops.length > 0 ? plain(hops[0]!) : plain(peer);
}
