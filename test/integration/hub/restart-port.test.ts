import net from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { runOhHai } from '../../helpers/cli.js';
import { tempEnv } from '../../helpers/env.js';
import { hubCall, scrapeMetrics, startHub, type TestHub } from '../../helpers/hub.js';
import { ephemeralRange, reservePort, type PortReservation } from '../../helpers/ports.js';

// A test Hub restarted on its port (TestHub.restart: the kill -9 rounds) must find the port free.
// A connection on the machine holding that number as its LOCAL port makes the listen fail with
// EADDRINUSE, and a connect() draws its local port from the ephemeral range — where listen(0),
// the helper's old way to pick the Hub's port, draws too. The helper now reserves a port outside
// that range (test/helpers/ports.ts; docs/node-lines.md, session 18).

/** The next reservation the Hub helper asks for is this port, not a drawn one (then as before). */
const next = vi.hoisted(() => ({ port: null as number | null }));
vi.mock('../../helpers/ports.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../helpers/ports.js')>();
  return {
    ...real,
    reservePort: async (...args: Parameters<typeof real.reservePort>): Promise<PortReservation> => {
      const port = next.port;
      next.port = null;
      return port === null ? real.reservePort(...args) : { port, release: () => {} };
    },
  };
});

const inRange = (port: number) => port >= ephemeralRange().low && port <= ephemeralRange().high;

/** A loopback listener and `n` client connections to it, each with a local port the kernel chose. */
async function clients(n: number): Promise<{ localPorts: number[]; close(): Promise<void> }> {
  const accepted: net.Socket[] = [];
  const srv = net.createServer((s) => accepted.push(s));
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const { port } = srv.address() as net.AddressInfo;
  const sockets = await Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<net.Socket>((resolve, reject) => {
          const s = net.connect(port, '127.0.0.1', () => resolve(s));
          s.once('error', reject);
        }),
    ),
  );
  return {
    localPorts: sockets.map((s) => s.localPort!),
    async close() {
      for (const s of [...sockets, ...accepted]) s.destroy();
      await new Promise<void>((resolve) => srv.close(() => resolve()));
    },
  };
}

describe('a test Hub restarted on its port', () => {
  const made: { dispose(): Promise<void> | void }[] = [];
  afterEach(async () => {
    for (const m of made.splice(0)) await m.dispose();
  });

  it('the old way fails: a port a client connection holds as its local one refuses the Hub (exit 2, address_in_use)', async () => {
    const held = await clients(1);
    made.push({ dispose: () => held.close() });
    const port = held.localPorts[0]!;
    // Where a connect() draws from is where listen(0) draws from: a Hub on listen(0) may be given
    // a port some connection holds when the Hub comes back.
    expect(inRange(port), `${port} in ${JSON.stringify(ephemeralRange())}`).toBe(true);
    const t = tempEnv();
    made.push({ dispose: () => t.cleanup() });
    const r = await runOhHai(['hub', 'serve', '--port', String(port), '--data', `${t.root}/data`], { env: { ...t.env, MA2H_SIGNING_KEY: 'k' } });
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toMatch(/address_in_use/);
  });

  it('the new way: the port is outside the range every connect() draws from, and the Hub comes back on it after a kill -9', async () => {
    const hub: TestHub = await startHub({ args: ['--admin-listen', '127.0.0.1:0'] });
    made.push(hub);
    expect(inRange(hub.port), `${hub.port} in ${JSON.stringify(ephemeralRange())}`).toBe(false);
    await hub.kill('SIGKILL');
    // Connections made while it is down: none can hold its port.
    const held = await clients(50);
    made.push({ dispose: () => held.close() });
    expect(held.localPorts.filter((p) => !inRange(p))).toEqual([]);
    await hub.restart();
    expect(new URL(hub.url).port).toBe(String(hub.port));
    expect((await hubCall(hub, 'GET', '/v1/capability')).status).toBe(200);
    // Its admin listener came back on another port: the scrape asks the restarted one.
    expect((await scrapeMetrics(hub))('oh_hai_hub_connections_accepted_total')).toBeGreaterThanOrEqual(1);
  });

  it('the first start moves to another port when its port was taken after the check; a restart stays', async () => {
    const squatter = net.createServer();
    const taken = await reservePort();
    await new Promise<void>((resolve) => squatter.listen(taken.port, '127.0.0.1', resolve));
    made.push({ dispose: () => new Promise<void>((resolve) => squatter.close(() => resolve())) }, { dispose: () => taken.release() });
    next.port = taken.port;
    const hub = await startHub();
    made.push(hub);
    expect(next.port, 'the helper asked for the taken port first').toBeNull();
    expect(hub.port).not.toBe(taken.port);
    expect(hub.output().stderr).toMatch(new RegExp(`127\\.0\\.0\\.1:${taken.port} is already in use`));
    await hub.kill('SIGKILL');
    await hub.restart();
    expect(hub.port).not.toBe(taken.port);
    expect((await hubCall(hub, 'GET', '/v1/capability')).status).toBe(200);
  });
});
