import net from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hubCall, openSession, startHub, type TestHub } from '../../helpers/hub.js';
import { freshDatabase, sql } from '../../helpers/postgres.js';
import { waitFor } from '../../helpers/wait.js';
import { openSse } from '../hub/sse.js';

/**
 * A TCP relay to the database whose answers on one connection (named by its port towards the
 * database, pg_stat_activity's client_port) can be held back, and which remembers what it passed on.
 */
function relay(to: { host: string; port: number }) {
  /** Each connection's client side, by its upstream socket. */
  const pairs = new Map<net.Socket, net.Socket>();
  const held = new Map<number, Buffer[]>();
  /** Connections whose answers are held from when their client sends this text. */
  const armed = new Map<number, string>();
  let passed = '';
  const server = net.createServer((client) => {
    const upstream = net.connect(to.port, to.host);
    pairs.set(upstream, client);
    client.on('data', (d) => {
      const port = upstream.localPort!;
      const text = armed.get(port);
      if (text !== undefined && d.toString('latin1').includes(text)) {
        armed.delete(port);
        held.set(port, []);
      }
      upstream.write(d);
    });
    upstream.on('data', (d) => {
      const chunks = held.get(upstream.localPort!);
      if (chunks) return void chunks.push(d);
      passed += d.toString('latin1');
      client.write(d);
    });
    const end = () => {
      pairs.delete(upstream);
      client.destroy();
      upstream.destroy();
    };
    client.on('close', end).on('error', end);
    upstream.on('close', end).on('error', end);
  });
  return {
    listen: () => new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as net.AddressInfo).port))),
    /** Hold the database's answers on the connection whose port towards it is `port`. */
    hold: (port: number) => void held.set(port, []),
    /** Hold them once the client sends `text` on that connection (its answer and all after it). */
    holdFrom: (port: number, text: string) => void armed.set(port, text),
    release(port: number) {
      const chunks = held.get(port)!;
      held.delete(port);
      const client = [...pairs].find(([up]) => up.localPort === port)![1];
      for (const c of chunks) client.write(c);
    },
    passed: () => passed,
    close: () =>
      new Promise<void>((resolve) => {
        for (const [up, client] of pairs) for (const s of [up, client]) s.destroy();
        server.close(() => resolve());
      }),
  };
}

// Issue 14: on PostgreSQL a stream connect is ONE statement (the renewal and the first page) and
// the stream is registered only once its answer arrives. A session ended on another instance just
// after the renewal committed is NOTIFYed here; heard before the stream was registered, that stream
// must still get its `closed` event at once, not stay open on a closed session until its hold
// bound (120 s here). The relay holds the connect's answer back until the NOTIFY has passed.
describe('a session ended elsewhere while a stream connect is answered (PostgreSQL)', () => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let proxy: ReturnType<typeof relay>;
  let a: TestHub, b: TestHub;
  beforeAll(async () => {
    db = await freshDatabase();
    const u = new URL(db.url);
    proxy = relay({ host: u.hostname, port: Number(u.port) });
    u.port = String(await proxy.listen());
    const args = ['--stream-max-hold-seconds', '120'];
    a = await startHub({ database: u.toString(), args });
    b = await startHub({ database: db.url, args, signingKey: a.signingKey });
  });
  afterAll(async () => {
    await b?.dispose();
    await a?.dispose();
    await proxy?.close();
    await db?.drop();
  });

  /** Lets the connect's held answer through: its stream opens and gets `closed` at once, not at its hold bound (120 s). */
  async function closedAtOnce(port: number, connecting: ReturnType<typeof openSse>): Promise<void> {
    proxy.release(port);
    const stream = await connecting;
    try {
      expect(stream.status, stream.errorBody).toBe(200);
      await waitFor(() => stream.events.some((e) => e.event === 'closed'), { timeoutMs: 20_000, what: '`closed` on the connection (the hold is 120 s)' });
      expect(stream.events.map((e) => e.event)).toEqual(['open', 'closed']);
      expect(JSON.parse(stream.events[1]!.data)).toEqual({ reason: 'closed' });
    } finally {
      stream.close();
    }
  }

  it('closes the new stream with `closed` at once', async () => {
    const reader = await openSession(a, 'reader', 'k-close');
    const session = { id: reader.sessionId };
    const blocker = new pg.Client({ connectionString: db.url });
    await blocker.connect();
    let port: number;
    try {
      await blocker.query('BEGIN');
      await blocker.query('SELECT 1 FROM sessions WHERE id = $1 FOR UPDATE', [session.id]);
      const connecting = openSse(`${a.url}/v1/inbox/stream?session=${session.id}`, { token: reader.token });
      // Asked on a connection of its own: inside the blocker's transaction the view stays as first read.
      const waiting = async () =>
        sql<{ client_port: number }>(db.url, `SELECT client_port FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'WITH oh_hai_clock%'`);
      await waitFor(async () => (await waiting()).length === 1, { timeoutMs: 20_000, what: "the connect's statement waiting on the session's row" });
      port = (await waiting())[0]!.client_port;
      proxy.hold(port);
      await blocker.query('ROLLBACK');
      // The renewal committed (its backend is idle again); its answer waits in the relay.
      await waitFor(async () => (await sql(db.url, `SELECT 1 FROM pg_stat_activity WHERE client_port = $1 AND state = 'idle'`, [port])).length === 1, {
        timeoutMs: 20_000,
        what: "the connect's renewal committed",
      });
      const closed = await hubCall(b, 'POST', `/v1/sessions/${session.id}/close`, { token: reader.token });
      expect(closed.status, closed.text).toBe(200);
      await waitFor(() => proxy.passed().includes(`session:${session.id}`), { timeoutMs: 20_000, what: 'the NOTIFY of the close passed to instance A' });
      await closedAtOnce(port, connecting);
    } finally {
      await blocker.end();
    }
  });

  // A connect whose one-statement renewal misses (here: the holder's home with another pid, a
  // restarted consumer) takes the locked unit; a close on another instance waits for that unit's
  // row lock and commits right after it, so its NOTIFY can reach this instance before the unit's
  // COMMIT answers, while the stream is not registered yet. The relay holds that answer until the
  // NOTIFY has passed: the connect must still hear it, through its fallback.
  it('closes the new stream with `closed` at once when the renewal took the locked unit', async () => {
    const reader = await openSession(a, 'fallback', 'k-fallback');
    const id = reader.sessionId;
    // Held by this home's consumer of pid 1, seen now: the connect below (pid 2) replaces it in the unit.
    await sql(
      db.url,
      `UPDATE sessions SET holder_home = 'home-f', holder_host = 'box', holder_pid = 1, holder_since = expires_at - 300000, holder_seen_at = expires_at - 300000 WHERE id = $1`,
      [id],
    );
    const blocker = new pg.Client({ connectionString: db.url });
    await blocker.connect();
    try {
      await blocker.query('BEGIN');
      await blocker.query('SELECT 1 FROM sessions WHERE id = $1 FOR UPDATE', [id]);
      const connecting = openSse(`${a.url}/v1/inbox/stream?session=${id}`, {
        token: reader.token,
        headers: { 'ma2h-consumer': 'home=home-f; host=box; pid=2' },
      });
      // The unit's SELECT … FOR UPDATE (the one-statement renewal missed without waiting: its WHERE is false).
      const waiting = async () =>
        sql<{ client_port: number }>(
          db.url,
          `SELECT client_port FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'SELECT * FROM sessions%FOR UPDATE'`,
        );
      await waitFor(async () => (await waiting()).length === 1, { timeoutMs: 20_000, what: "the connect's locked unit waiting on the session's row" });
      const port = (await waiting())[0]!.client_port;
      proxy.holdFrom(port, 'COMMIT');
      await blocker.query('ROLLBACK');
      await waitFor(async () => (await sql(db.url, `SELECT 1 FROM pg_stat_activity WHERE client_port = $1 AND state = 'idle'`, [port])).length === 1, {
        timeoutMs: 20_000,
        what: "the connect's unit committed",
      });
      const closed = await hubCall(b, 'POST', `/v1/sessions/${id}/close`, { token: reader.token });
      expect(closed.status, closed.text).toBe(200);
      // B's close (A's own NOTIFY of the replacement goes out only after its COMMIT's answer, the one held).
      await waitFor(() => proxy.passed().includes(`session:${id}`), { timeoutMs: 20_000, what: 'the NOTIFY of the close passed to instance A' });
      await closedAtOnce(port, connecting);
    } finally {
      await blocker.end();
    }
  });
});
