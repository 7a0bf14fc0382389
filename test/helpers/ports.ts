import { spawnSync } from 'node:child_process';
import { randomInt } from 'node:crypto';
import dgram from 'node:dgram';
import { readFileSync } from 'node:fs';
import net from 'node:net';

/**
 * Ports for the servers the tests start and may start again on the same port (a Hub after a
 * kill -9, nginx, PostgreSQL): drawn OUTSIDE the kernel's ephemeral range. A connect()'s local
 * port and a listen(0)'s port both come from that range, and a connection on the machine that
 * holds a port as its local one makes a later listen on it fail with EADDRINUSE — for as long as
 * the connection and then its TIME_WAIT last (up to 60 s), longer than a restart can wait. Outside
 * the range no connect() and no listen(0) ever takes the port (docs/node-lines.md, session 18).
 *
 * Two test files in parallel workers (or two vitest runs) never get the same port: a reservation
 * holds a UDP socket on the port's number for as long as the server may use it. TCP and UDP ports
 * are apart, so it never stands in the server's way; another reservation's UDP bind on the number
 * fails, and it draws again. The kernel frees it when the worker dies, so nothing goes stale.
 */

export interface PortRange {
  low: number;
  high: number;
}

/** Loopback only: every server the tests start listens there. */
const HOST = '127.0.0.1';
/**
 * The lowest port drawn: above every port fetch refuses (the Fetch standard's "bad ports", the last
 * 10080; undici's fetch fails with `bad port` before it connects), since the tests call their servers
 * through fetch. Drawn from 1024, one draw in ~1,700 was such a port (19 of 31,744 below Linux's range):
 * the likely cause of CI's one failure in session 18 (reconnect-commit.test.ts on Node 22: the Hub
 * listening, its first call `fetch failed` 13 ms in).
 */
export const LOWEST_DRAWN = 10081;
const HIGHEST = 65535;
/** Linux's default (32768–60999) and IANA's (49152–65535, macOS, Windows) together. */
const WIDEST_DEFAULT: PortRange = { low: 32768, high: HIGHEST };

/** "32768\t60999" (Linux), or the two lines of `sysctl -n …first …last` (BSDs, macOS). */
export function parseRange(text: string): PortRange | null {
  const m = /^\s*(\d+)\s+(\d+)\s*$/.exec(text);
  if (!m) return null;
  const low = Number(m[1]);
  const high = Number(m[2]);
  return low >= 1 && low <= high && high <= HIGHEST ? { low, high } : null;
}

function readEphemeralRange(): PortRange {
  try {
    const proc = parseRange(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8'));
    if (proc !== null) return proc;
  } catch {
    // No /proc (macOS, a BSD, a container without it): ask sysctl, else assume the widest default.
  }
  const bsd = spawnSync('sysctl', ['-n', 'net.inet.ip.portrange.first', 'net.inet.ip.portrange.last'], { encoding: 'utf8' });
  return (bsd.status === 0 ? parseRange(bsd.stdout) : null) ?? WIDEST_DEFAULT;
}

let cached: PortRange | undefined;

/** The kernel's ephemeral port range, read once per worker. */
export function ephemeralRange(): PortRange {
  cached ??= readEphemeralRange();
  return cached;
}

/**
 * The ports from {@link LOWEST_DRAWN} outside `range`, as ranges. When the range leaves none (a machine
 * that gave every such port to it), all of them: the old risk, and no worse than listen(0).
 */
export function portsOutside(range: PortRange): PortRange[] {
  const out = [
    { low: LOWEST_DRAWN, high: range.low - 1 },
    { low: range.high + 1, high: HIGHEST },
  ].filter((r) => r.low <= r.high);
  return out.length > 0 ? out : [{ low: LOWEST_DRAWN, high: HIGHEST }];
}

/** A port drawn uniformly from `ranges`. */
export function drawPort(ranges: PortRange[]): number {
  const size = ranges.reduce((n, r) => n + r.high - r.low + 1, 0);
  let i = randomInt(size);
  for (const r of ranges) {
    const n = r.high - r.low + 1;
    if (i < n) return r.low + i;
    i -= n;
  }
  throw new Error('drawPort: no ports in the ranges');
}

export interface PortReservation {
  port: number;
  /** Let other reservations have the port again (idempotent). */
  release(): void;
}

function holdUdp(port: number): Promise<dgram.Socket | null> {
  return new Promise((resolve) => {
    const s = dgram.createSocket('udp4');
    s.once('error', () => {
      s.close();
      resolve(null);
    });
    s.bind({ port, address: HOST }, () => {
      s.removeAllListeners('error');
      // A reservation a test forgets must not keep its worker alive.
      s.unref();
      resolve(s);
    });
  });
}

/** Whether a TCP listen on the port succeeds now (as the server's will: Node's, with SO_REUSEADDR). */
function tcpFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, HOST, () => srv.close(() => resolve(true)));
  });
}

/**
 * A free loopback port outside the ephemeral range, reserved until `release()`. A drawn port that
 * another reservation holds or something listens on is skipped and another drawn. `draw` is for
 * the tests of this helper.
 */
export async function reservePort(opts: { draw?: () => number; attempts?: number } = {}): Promise<PortReservation> {
  const draw = opts.draw ?? (() => drawPort(portsOutside(ephemeralRange())));
  const attempts = opts.attempts ?? 100;
  const tried: number[] = [];
  for (let i = 0; i < attempts; i++) {
    const port = draw();
    tried.push(port);
    const udp = await holdUdp(port);
    if (udp === null) continue;
    if (!(await tcpFree(port))) {
      udp.close();
      continue;
    }
    let held = true;
    return {
      port,
      release() {
        if (held) udp.close();
        held = false;
      },
    };
  }
  throw new Error(`no free port outside the ephemeral range ${JSON.stringify(ephemeralRange())} in ${attempts} draws (${tried.slice(-5).join(', ')}…)`);
}
