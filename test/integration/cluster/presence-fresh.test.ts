import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { twoInstances } from '../../helpers/cluster.js';
import { hubCall } from '../../helpers/hub.js';
import { waitFor } from '../../helpers/wait.js';
import { openSse, type SseConn } from '../hub/sse.js';

// Issue 14 (session 14): on a shared store an instance writes its held streams' sessions seen once
// a period, but a stream reconnects once per hold and its connect's renewal writes the session (and
// its holder) seen already — at 10,000 streams the write was 10,000 rows a period, two thirds of
// them seen by their own connect less than a period before. Only streams that connected a period
// ago or more are written now. What each presence statement wrote is read from the database (a
// trigger logs every row an UPDATE of sessions writes, with its transaction and text), and the
// rules are asked on the other instance, which holds no stream and so decides from the rows alone.

/** The presence write's period: a third of the windows below (server.ts `seenMs`). */
const PERIOD_MS = 1500;
const WINDOW_MS = 3 * PERIOD_MS;
/** Streams connected at spread times within a period, so the writes meet them at every age. */
const FRESH = 5;
/** The instants compared come from two clocks of this machine (the Hub's monotonic one, the database's wall clock). */
const CLOCKS_MS = 5;

const LOG = `
  CREATE TABLE seen_log (n BIGSERIAL PRIMARY KEY, id TEXT, seen_at BIGINT, holder_seen_at BIGINT, xact BIGINT, query TEXT);
  CREATE FUNCTION seen_log() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    INSERT INTO seen_log (id, seen_at, holder_seen_at, xact, query) VALUES (NEW.id, NEW.seen_at, NEW.holder_seen_at, txid_current(), current_query());
    RETURN NEW;
  END $$;
  CREATE TRIGGER seen_log AFTER UPDATE ON sessions FOR EACH ROW EXECUTE FUNCTION seen_log();`;

interface Logged {
  id: string;
  seen_at: string;
  holder_seen_at: string | null;
  xact: string;
  query: string;
}

describe('the presence write skips the streams whose connect marked them seen within its period (PostgreSQL)', () => {
  const hubs = twoInstances([
    '--holder-stale-seconds',
    String(WINDOW_MS / 1000),
    '--presence-seconds',
    String(WINDOW_MS / 1000),
    '--stream-max-hold-seconds',
    '120',
  ]);

  it('writes a stream held a period or more, never one connected within the period, and every held session stays seen', async () => {
    const a = hubs.a();
    const b = hubs.b();
    const db = new pg.Client({ connectionString: hubs.db().url });
    await db.connect();
    const streams: SseConn[] = [];
    try {
      await db.query(LOG);
      const reader = await a.mintAgent('reader');
      const sender = await a.mintAgent('sender');
      const open = async (name: string) => {
        const r = await hubCall(a, 'POST', '/v1/sessions', {
          token: reader.token,
          body: { client_key: `k-${name}`, name, home: `home-${name}`, host: 'hostA', pid: 100, lease_seconds: 300 },
        });
        expect(r.status, r.text).toBe(201);
        const session = r.body.session as { id: string; address: string };
        // The instant (the machine's wall clock) before the connect: the Hub takes its stream's
        // connect time after it, and its renewal's seen_at is later still.
        const sentAt = Date.now();
        const s = await openSse(`${a.url}/v1/inbox/stream?session=${session.id}`, {
          token: reader.token,
          headers: { 'MA2H-Consumer': `home=home-${name}; host=hostA; pid=100` },
        });
        expect(s.status, s.errorBody).toBe(200);
        streams.push(s);
        return { ...session, name, sentAt };
      };
      const logged = async () => (await db.query<Logged>('SELECT id, seen_at, holder_seen_at, xact, query FROM seen_log ORDER BY n')).rows;
      // The presence statement's text (streamsSeen); a connect's renewal sets expires_at first.
      const presence = (rows: Logged[]) => rows.filter((r) => /UPDATE sessions SET seen_at = /.test(r.query));
      const writesOf = (rows: Logged[], id: string) => presence(rows).filter((r) => r.id === id).length;

      const old = await open('old');
      await waitFor(async () => writesOf(await logged(), old.id) > 0, { timeoutMs: 30_000, intervalMs: 20, what: 'a presence write of the old stream' });
      const fresh: Array<Awaited<ReturnType<typeof open>>> = [];
      for (let i = 0; i < FRESH; i++) {
        fresh.push(await open(`fresh-${i}`));
        // Spread over the period, so the writes after them meet some just connected and some not.
        await new Promise((r) => setTimeout(r, PERIOD_MS / FRESH));
      }
      // Each fresh stream is written once held a period, and again until its connect's own seen_at
      // would have left the window (three writes: the first a period or more after the connect).
      await waitFor(async () => ((rows) => fresh.every((f) => writesOf(rows, f.id) >= 3))(await logged()), {
        timeoutMs: 60_000,
        intervalMs: 50,
        what: 'three presence writes of every fresh stream',
      });
      const rows = await logged();

      // The writes, one statement (one transaction, one `?now`) each.
      const writes = new Map<string, { at: number; ids: Set<string> }>();
      for (const r of presence(rows)) {
        const w = writes.get(r.xact) ?? { at: Number(r.seen_at), ids: new Set<string>() };
        expect(Number(r.seen_at)).toBe(w.at);
        w.ids.add(r.id);
        writes.set(r.xact, w);
      }
      // No write took a stream connected less than a period before it. A write that took one
      // started a period or more after the stream's connect, which came after `sentAt`.
      const early = [...writes.values()].flatMap((w) =>
        fresh.filter((f) => w.ids.has(f.id) && w.at - f.sentAt < PERIOD_MS - CLOCKS_MS).map((f) => `${f.name}: ${w.at - f.sentAt} ms`),
      );
      expect(early, 'streams written by a presence write less than a period after their connect').toEqual([]);
      // The stream held all along was written by every write after its first (a period apart).
      expect(writesOf(rows, old.id)).toBeGreaterThanOrEqual(4);

      // Every held session stayed seen: from its connect on, no gap between two writes of its
      // seen_at (its holder's too) reached the rules' window.
      for (const s of [old, ...fresh]) {
        for (const column of ['seen_at', 'holder_seen_at'] as const) {
          const at = rows.filter((r) => r.id === s.id).map((r) => Number(r[column]));
          const gaps = at.slice(1).map((t, i) => t - at[i]!);
          expect(Math.max(...gaps), `${s.name} ${column}: ${at.join(', ')}`).toBeLessThan(WINDOW_MS);
        }
      }

      // The other instance holds none of these streams: it decides from the rows, each connect
      // a window or more ago by now. Every holder is live (another home is refused) and every
      // session's address is online.
      for (const s of [old, ...fresh]) {
        const intruder = await openSse(`${b.url}/v1/inbox/stream?session=${s.id}`, {
          token: reader.token,
          headers: { 'MA2H-Consumer': 'home=home-intruder; host=hostB; pid=200' },
        });
        intruder.close();
        expect(intruder.status, `${s.name}: ${intruder.errorBody}`).toBe(409);
        expect(JSON.parse(intruder.errorBody).error.code).toBe('session_held');
        const sent = await hubCall(b, 'POST', '/v1/messages', { token: sender.token, body: { to: s.address, intent: 'notify', text: 'are you there' } });
        expect(sent.status, sent.text).toBe(202);
        expect(sent.body.message.destination.snapshot, s.name).toBe('online');
      }
    } finally {
      for (const s of streams) s.close();
      await db.end();
    }
  });
});
