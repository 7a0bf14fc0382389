import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { hubCall, startHub, type TestHub } from '../../helpers/hub.js';
import { freshDatabase } from '../../helpers/postgres.js';
import { waitFor } from '../../helpers/wait.js';
import { openSse, type SseConn } from '../hub/sse.js';

// Issue 14 (session 22, quiet22): what a PostgreSQL-backed `hub serve` logs while its database is
// away, and when it is back. The Hub reaches the database through a TCP proxy in this test: cut, it
// drops every connection and every new one at once (the database unreachable), without stopping
// the cluster other tests share. Each timer-driven work logs one "failing" line, reminders at most
// once a minute, and one "working again" line, where it logged a line per period (the sweep's each
// second, the listener's and the notifier's each 500 ms).

const CONSUMER = { 'MA2H-Consumer': 'home=h; host=x; pid=1' };

interface Proxy {
  port: number;
  /** Drop every connection, and every new one as it comes. */
  cut(): void;
  restore(): void;
  close(): Promise<void>;
}

async function cuttableProxy(target: { host: string; port: number }): Promise<Proxy> {
  let open = true;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    if (!open) return void client.destroy();
    const upstream = net.connect(target.port, target.host);
    sockets.add(client).add(upstream);
    const end = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    for (const s of [client, upstream]) s.on('error', end).on('close', end);
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    cut() {
      open = false;
      for (const s of sockets) s.destroy();
    },
    restore() {
      open = true;
    },
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

interface LogLine {
  level: string;
  msg: string;
  event?: string;
  work?: string;
  failures?: number;
  since?: string;
  seconds?: number;
  cause?: string;
}

/** The Hub's log as `--log-format json` writes it: every line one object (a line that is not fails the test). */
const logOf = (hub: TestHub): LogLine[] =>
  (hub.output().stdout + hub.output().stderr)
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as LogLine);
const events = (hub: TestHub, event: string, work: string): LogLine[] => logOf(hub).filter((l) => l.event === event && l.work === work);

describe('a PostgreSQL Hub whose database goes away and comes back', () => {
  const cleanup: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const c of cleanup.splice(0).reverse()) await c().catch(() => undefined);
  });

  it('logs each background work failing once and working again once, answers /readyz 503 meanwhile, and counts the failures in /metrics', async () => {
    const db = await freshDatabase();
    cleanup.push(() => db.drop());
    const real = new URL(db.url);
    const proxy = await cuttableProxy({ host: real.hostname, port: Number(real.port) });
    cleanup.push(() => proxy.close());
    const proxied = new URL(db.url);
    proxied.port = String(proxy.port);
    // Presence and holder-stale windows of 3 s: the presence write runs every second, like the sweep.
    const hub = await startHub({
      database: proxied.toString(),
      args: [
        '--log-format',
        'json',
        '--admin-listen',
        '127.0.0.1:0',
        '--presence-seconds',
        '3',
        '--holder-stale-seconds',
        '3',
        '--stream-max-hold-seconds',
        '120',
      ],
    });
    cleanup.push(() => hub.dispose());
    const admin = logOf(hub)
      .map((l) => /^hub: admin \(healthz, readyz, metrics\) at (\S+)$/.exec(l.msg)?.[1])
      .find((u) => u !== undefined);
    expect(admin).toBeDefined();
    const readyz = async () => (await fetch(`${admin}/readyz`)).status;
    const failures = async (work: string): Promise<number> => {
      const text = await (await fetch(`${admin}/metrics`)).text();
      return Number(new RegExp(`^oh_hai_hub_background_failures_total\\{work="${work}"\\} (\\S+)$`, 'm').exec(text)?.[1] ?? 0);
    };

    // Two held streams (the presence write records them; the end of each is written when it closes).
    const reader = await hub.mintAgent('reader');
    const streams: SseConn[] = [];
    for (const key of ['a', 'b']) {
      const opened = await hubCall(hub, 'POST', '/v1/sessions', { token: reader.token, body: { client_key: key, lease_seconds: 300 } });
      expect(opened.status, opened.text).toBe(201);
      const sse = await openSse(`${hub.url}/v1/inbox/stream?session=${(opened.body.session as { id: string }).id}`, { token: reader.token, headers: CONSUMER });
      cleanup.push(async () => sse.close());
      expect(sse.status, sse.errorBody).toBe(200);
      await sse.next((e) => e.event === 'open');
      streams.push(sse);
    }
    expect(await readyz()).toBe(200);

    proxy.cut();
    // A stream that ends while the database is away: its end's write fails.
    streams[0]!.close();
    // Many periods of each: the sweep's and presence's (1 s), the listener's and notifier's re-opens (500 ms).
    await waitFor(async () => ((await failures('sweep')) >= 6 && (await failures('presence')) >= 4 && (await failures('listener')) >= 10) || null, {
      timeoutMs: 30_000,
      what: 'six sweeps, four presence writes and ten listener re-opens failed',
    });
    await waitFor(async () => (await failures('stream_ends')) >= 1 || null, { timeoutMs: 10_000, what: "the closed stream's end write failed" });
    expect(await readyz()).toBe(503);
    expect(await failures('notifier')).toBeGreaterThanOrEqual(5);

    // While failing: one line per work, with its cause.
    for (const work of ['sweep', 'presence', 'listener', 'notifier', 'stream_ends', 'pool']) {
      const failing = events(hub, 'background_failing', work);
      expect(failing, work).toHaveLength(1);
      expect(failing[0]!.level).toBe('error');
      expect(failing[0]!.cause, work).toMatch(/\S/);
    }
    // The password never shows.
    expect(hub.output().stderr).not.toContain(decodeURIComponent(real.password));

    proxy.restore();
    await waitFor(
      () => ['sweep', 'presence', 'listener', 'notifier', 'pool'].every((work) => events(hub, 'background_working_again', work).length === 1) || null,
      {
        timeoutMs: 30_000,
        what: 'the sweep, presence, listener and notifier working again',
      },
    );
    await waitFor(async () => (await readyz()) === 200 || null, { timeoutMs: 30_000, what: '/readyz 200 again' });
    // The other stream's end is written: the stream ends' writes work again.
    streams[1]!.close();
    await waitFor(() => events(hub, 'background_working_again', 'stream_ends').length === 1 || null, { timeoutMs: 15_000, what: 'stream ends working again' });

    for (const work of ['sweep', 'presence', 'listener', 'notifier', 'stream_ends', 'pool']) {
      const back = events(hub, 'background_working_again', work);
      expect(back, work).toHaveLength(1);
      expect(back[0]!.level).toBe('info');
      expect(back[0]!.msg).toMatch(/ working again after \d+ failure\(s\) over [\d.]+ s$/);
      // Every failure counted, logged or not; the line says as many as /metrics counted.
      expect(back[0]!.failures, work).toBe(await failures(work));
      expect(events(hub, 'background_failing', work), work).toHaveLength(1);
      expect(back[0]!.since).toBe(events(hub, 'background_failing', work)[0]!.since);
      // The database was away for less than a minute: no reminder.
      expect(events(hub, 'background_still_failing', work), work).toEqual([]);
    }
    expect((await failures('sweep')) >= 6).toBe(true);
    // Nothing else logs per failure (the pool's idle connections logged a line each, all at once, before).
    const other = logOf(hub).filter((l) => l.level === 'error' && l.event === undefined && l.msg !== 'request');
    expect(other.map((l) => l.msg)).toEqual([]);
  });
});
