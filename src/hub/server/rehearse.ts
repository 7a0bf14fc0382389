import { IncomingMessage, ServerResponse } from 'node:http';
import { Duplex } from 'node:stream';
import { canonicalJson, formatAddress } from '../contract/index.js';
import type { Clock } from '../../util/clock.js';
import { Bus } from './bus.js';
import type { HubConfig } from './config.js';
import { Signer } from './delivery.js';
import { mailboxKey, type EntryRow } from './entries.js';
import { FaultTable } from './faults.js';
import type { Sql } from './sql.js';
import { RecentEntries } from './sqlite-pages.js';
import { frame, HeldStream, STREAM_HEADERS, type PushCore } from './stream.js';
import { TURN_BYTES, TurnBudget } from './turns.js';

/** Pushes the rehearsal makes: the first compiles the path, the ones after run it with its inline caches filled. */
export const REHEARSED_PUSHES = 3;

const AGENT = 'agt_rehearsal';
const SESSION = 'sess_rehearsal';

/** The rehearsal's stand-in for a stream's socket: what it is given stays in memory. */
class DiscardSocket extends Duplex {
  written = '';

  constructor() {
    super({
      read() {},
      write: (chunk: Buffer | string, _encoding, done: () => void) => {
        this.written += String(chunk);
        done();
      },
      // The response corks its socket for each write and uncorks it a tick later, as on a net.Socket: one writev.
      writev: (chunks: Array<{ chunk: Buffer | string }>, done: () => void) => {
        for (const c of chunks) this.written += String(c.chunk);
        done();
      },
    });
  }
}

/**
 * Runs the push path a committed send wakes — the bus's delivery, the stream's wake and page, the
 * turn budget, the page from memory (SQLite's {@link RecentEntries}), the delivery's signature and
 * its JSON, the `entries` frame and its chunked write on the response — {@link REHEARSED_PUSHES}
 * times on made-up entries, once per Hub, right after it listens. A fresh Hub's first push ran all
 * of that for the first time: V8 compiled each function on its first call and OpenSSL fetched its
 * HMAC on the first signature (the first push after every start took 2–3 ms of CPU, against ~0.3 ms
 * for the ones after: docs/performance.md "Push latency from the commit (session 23, hubpush23)").
 *
 * Every part the stream is given is a stand-in: a store whose reads return nothing and which cannot
 * write, a bus, turn budget, signer (no fault rules; the Hub's own signer keeps its last jti) and
 * metrics of its own, a registry and stream ends that record nothing, a response on a socket that
 * keeps what it is given in memory. Nothing is read from or written to the store, sent to anyone,
 * counted or registered. Resolves with the bytes the stand-in socket was given (what a test checks).
 */
export async function rehearsePush(config: HubConfig, clock: Clock): Promise<string> {
  const recent = new RecentEntries();
  const read: Sql = { get: async () => null, all: async () => [], run: async () => 0 };
  recent.serves(read);
  const store = { read, write: () => Promise.reject(new Error('the push rehearsal writes nothing')), reading: <T>(fn: (q: Sql) => Promise<T>) => fn(read) };
  let failure: unknown = null;
  const core: PushCore = {
    config,
    clock,
    bus: new Bus(),
    turns: new TurnBudget(Math.min(config.pageBytes, TURN_BYTES)),
    store: { as: () => store },
    streams: { remove: () => undefined },
    ends: { record: () => undefined },
    pushes: { worked: () => undefined, failed: (e: unknown) => void (failure = e) },
    metrics: { pushed: () => undefined, pagesRead: () => undefined },
  };
  const signer = new Signer({ config, clock, faults: new FaultTable() });
  const socket = new DiscardSocket();
  // A response as the server makes one for a GET over HTTP/1.1 (chunked), on the stand-in socket:
  // node:http types the socket as a net.Socket, and uses of it only what a Duplex has.
  const req = new IncomingMessage(socket as unknown as ConstructorParameters<typeof IncomingMessage>[0]);
  req.method = 'GET';
  req.httpVersionMajor = 1;
  req.httpVersionMinor = 1;
  const res = new ServerResponse(req);
  res.assignSocket(socket as unknown as Parameters<ServerResponse['assignSocket']>[0]);
  const stream = new HeldStream(core, signer, res, SESSION, null, false);
  try {
    res.writeHead(200, STREAM_HEADERS);
    const hold = config.streamMaxHoldSeconds * 1000;
    stream.hold(frame('open', { session: SESSION, hold_ms: hold }), null, AGENT, hold, () => false);
    // The stream's first page (what its connect reads) finds nothing pending: its next pages come from memory.
    await nextTurn();
    for (let n = 1; n <= REHEARSED_PUSHES; n++) {
      const row = rehearsalRow(n, clock.now());
      recent.begun();
      recent.inserted(row);
      recent.ended(true);
      core.bus.mail.emit(mailboxKey(AGENT, SESSION));
      // As the group commit does after its COMMIT: the page, its signature and its write follow in
      // this turn's microtasks (and the socket's uncork on the next tick).
      core.bus.deliver();
      await nextTurn();
      if (failure !== null) throw failure;
    }
  } finally {
    stream.finish(null);
    socket.destroy();
  }
  return socket.written;
}

const nextTurn = (): Promise<void> => new Promise<void>((resolve) => setImmediate(resolve));

/** A made-up entry's row as the SQLite store inserts it (canonical body, pending in the rehearsal's session mailbox). */
function rehearsalRow(n: number, now: number): EntryRow {
  const entry = {
    id: `ent_rehearsal_${n}`,
    kind: 'message',
    from: formatAddress('agt_rehearsal_sender', null),
    to: formatAddress(AGENT, SESSION),
    created_at: new Date(now).toISOString(),
    // No message id: the push trace (OH_HAI_TRACE) keys its lines by one, and the rehearsal has none to trace.
    intent: 'notify',
    text: 'rehearsal',
  };
  return {
    seq: n,
    id: entry.id,
    kind: 'message',
    body: canonicalJson(entry),
    to_agent: AGENT,
    to_session: SESSION,
    claimed_session: null,
    message_id: null,
    created_at: now,
    delivered: 0,
    state: 'pending',
    canonical: 1,
  };
}
