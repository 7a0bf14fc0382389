import { readFileSync } from 'node:fs';
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { drawPort, ephemeralRange, parseRange, portsOutside, reservePort } from '../../helpers/ports.js';

// The port chooser of the servers the tests restart on their port (test/helpers/ports.ts).

const listenOn = (port: number): Promise<net.Server> =>
  new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(port, '127.0.0.1', () => resolve(srv));
  });
const close = (srv: net.Server) => new Promise<void>((resolve) => srv.close(() => resolve()));
/** A draw that gives `ports` in turn (the last one from then on) and records what it gave. */
const drawing = (ports: number[]) => {
  const drawn: number[] = [];
  const draw = () => {
    const port = ports[Math.min(drawn.length, ports.length - 1)]!;
    drawn.push(port);
    return port;
  };
  return { drawn, draw };
};
const outside = (port: number) => {
  const { low, high } = ephemeralRange();
  return port < low || port > high;
};

describe('the ephemeral range', () => {
  it('is the kernel’s, read at run time', () => {
    let proc: string | null = null;
    try {
      proc = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8');
    } catch {
      // Not Linux, or no /proc: the range comes from sysctl or the default.
    }
    if (proc !== null) expect(ephemeralRange()).toEqual(parseRange(proc));
    const { low, high } = ephemeralRange();
    expect(low).toBeLessThanOrEqual(high);
  });

  it('parses Linux’s tab-separated pair and sysctl’s two lines, and refuses anything else', () => {
    expect(parseRange('32768\t60999\n')).toEqual({ low: 32768, high: 60999 });
    expect(parseRange('49152\n65535\n')).toEqual({ low: 49152, high: 65535 });
    for (const bad of ['', '32768', '60999 32768', '1 70000', 'a b']) expect(parseRange(bad), bad).toBeNull();
  });

  it('leaves the ports above fetch’s bad ones on either side, or all of them when it covers every one', () => {
    expect(portsOutside({ low: 32768, high: 60999 })).toEqual([
      { low: 10081, high: 32767 },
      { low: 61000, high: 65535 },
    ]);
    expect(portsOutside({ low: 49152, high: 65535 })).toEqual([{ low: 10081, high: 49151 }]);
    expect(portsOutside({ low: 1024, high: 65535 })).toEqual([{ low: 10081, high: 65535 }]);
    expect(portsOutside({ low: 8000, high: 20000 })).toEqual([{ low: 20001, high: 65535 }]);
  });

  it('never draws a port fetch refuses: the last of the Fetch standard’s bad ports is below the lowest drawn', async () => {
    // The tests reach their servers through fetch, which fails a bad port before it connects.
    for (const bad of [5060, 6000, 6665, 10080]) {
      const failed = await fetch(`http://127.0.0.1:${bad}/`).then(
        () => null,
        (e: unknown) => (e instanceof Error && e.cause instanceof Error ? e.cause.message : String(e)),
      );
      expect(failed, String(bad)).toBe('bad port');
    }
    for (const r of portsOutside(ephemeralRange())) expect(r.low).toBeGreaterThan(10080);
  });

  it('draws from every range given, and only from them', () => {
    const ranges = [
      { low: 2000, high: 2001 },
      { low: 3000, high: 3000 },
    ];
    const seen = new Set(Array.from({ length: 300 }, () => drawPort(ranges)));
    expect([...seen].sort()).toEqual([2000, 2001, 3000]);
  });
});

describe('reservePort', () => {
  it('gives a port outside the ephemeral range that a server can listen on', async () => {
    for (let i = 0; i < 5; i++) {
      const r = await reservePort();
      try {
        expect(outside(r.port), `${r.port} in ${JSON.stringify(ephemeralRange())}`).toBe(true);
        await close(await listenOn(r.port));
      } finally {
        r.release();
      }
    }
  });

  it('draws again when something listens on the drawn port', async () => {
    const taken = await reservePort();
    const free = await reservePort();
    const srv = await listenOn(taken.port);
    taken.release();
    free.release();
    try {
      const { drawn, draw } = drawing([taken.port, free.port]);
      const r = await reservePort({ draw });
      r.release();
      expect(drawn).toEqual([taken.port, free.port]);
      expect(r.port).toBe(free.port);
    } finally {
      await close(srv);
    }
  });

  it('never gives a port another reservation holds (test files in parallel workers)', async () => {
    const first = await reservePort();
    const other = await reservePort();
    other.release();
    const { drawn, draw } = drawing([first.port, other.port]);
    const second = await reservePort({ draw });
    try {
      expect(second.port).toBe(other.port);
      expect(drawn).toEqual([first.port, other.port]);
      // Released, the port is drawn again.
      first.release();
      const again = await reservePort({ draw: drawing([first.port]).draw });
      expect(again.port).toBe(first.port);
      again.release();
    } finally {
      first.release();
      second.release();
    }
  });

  it('says so when every draw is taken', async () => {
    const held = await reservePort();
    try {
      await expect(reservePort({ draw: drawing([held.port]).draw, attempts: 3 })).rejects.toThrow(/no free port outside the ephemeral range .* in 3 draws/);
    } finally {
      held.release();
    }
  });
});
