import type { ServerResponse } from 'node:http';
import type { ConsumerIdentity } from '../contract/index.js';
import { coalesced, Gate } from './coalesce.js';
import { holdMs } from './config.js';
import type { HubCore } from './core.js';
import type { Signer } from './delivery.js';
import type { FailureLog } from './failure-log.js';
import type { HubMetrics } from './metrics.js';
import type { StreamEnds } from './seen.js';
import type { Store } from './sql.js';
import type { Work } from './work.js';
import { claimPage, mailboxKey, needsClaim, type PendingPage } from './entries.js';
import { PageReader } from './page-reader.js';
import { readSqlitePage } from './sqlite-pages.js';
import { errorReply, good, type Answer, type Reply } from './http.js';
import { iso } from './ids.js';
import type { OpenStream, StreamCloseReason, StreamRegistry } from './registry.js';
import { presentSession, presentStream, reconcileSession, type Presented, type StreamLease } from './sessions.js';
import { hop, TRACE } from '../../util/trace.js';

/** How many deliveries one `entries` event carries at most (and at most `pageBytes` of them). */
const PUSH_BATCH = 100;
/**
 * Pages run as this work, whoever's commit woke them (/metrics counts round trips by work). On
 * PostgreSQL they draw from stream work's share of the pool, so however many streams have a
 * backlog, the connections left for everyone else's requests stay free, and they go before the
 * streams' connects (src/hub/server/lanes.ts).
 */
const PUSH: Work = { name: 'push', lane: 'page' };

/**
 * What a held stream uses of its Hub: the Hub's {@link HubCore}, or the stand-ins of the push's
 * rehearsal (rehearse.ts), which touch no store row, register nothing and count nothing.
 */
export type PushCore = Pick<HubCore, 'config' | 'clock' | 'bus' | 'turns'> & {
  store: { as(work: Work): Pick<Store, 'read' | 'write' | 'reading'> };
  streams: Pick<StreamRegistry, 'remove'>;
  ends: Pick<StreamEnds, 'record'>;
  pushes: Pick<FailureLog, 'worked' | 'failed'>;
  metrics: Pick<HubMetrics, 'pushed' | 'pagesRead'>;
};

export interface StreamRequest {
  /**
   * The agent let in already, or the presented token's hash: the renewal statement lets it in
   * itself, and `admit` lets it in as any request is (its refusal worded) when that statement misses.
   */
  who: { agentId: string } | { tokenHash: string; admit: () => Promise<Answer<string>> };
  sessionId: string;
  consumer: ConsumerIdentity | null;
  /** Fault injection: send `open`, then destroy the socket. */
  drop: boolean;
}

/**
 * Stream pages read at once per Hub: half the database pool. On PostgreSQL the batched read
 * gathers the streams woken meanwhile while it waits here; the pool's stream lane (which stream
 * connects share) is what keeps the rest of the pool for everyone else's requests.
 */
const pageGates = new WeakMap<PushCore, Gate>();
function pageGate(core: PushCore): Gate {
  let gate = pageGates.get(core);
  if (!gate) pageGates.set(core, (gate = new Gate(Math.max(1, Math.floor(core.config.databasePoolMax / 2)))));
  return gate;
}

/** On a store a round trip away, the pages of the streams woken together are read by one statement. */
const pageReaders = new WeakMap<PushCore, PageReader>();
function pageReader(core: PushCore): PageReader {
  let reader = pageReaders.get(core);
  if (!reader) pageReaders.set(core, (reader = new PageReader(pushStore(core), pageGate(core), (n) => core.metrics.pagesRead(n))));
  return reader;
}

/** The store as {@link PUSH}, one view per Hub. */
const pushStores = new WeakMap<PushCore, Pick<Store, 'read' | 'write' | 'reading'>>();
function pushStore(core: PushCore): Pick<Store, 'read' | 'write' | 'reading'> {
  let store = pushStores.get(core);
  if (!store) pushStores.set(core, (store = core.store.as(PUSH)));
  return store;
}

/** A stream's answer headers: the same for every connect (writeHead reads them, never changes them). */
export const STREAM_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-store',
  connection: 'keep-alive',
  'x-accel-buffering': 'no',
} as const;

export const frame = (event: string, data: unknown): string => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;

/** What a held stream's response carries: the stream, for its listeners (shared functions, not a closure each per connect). */
const HELD = Symbol('held stream');
type HeldResponse = ServerResponse & { [HELD]?: HeldStream };

function onResponseClose(this: HeldResponse): void {
  this[HELD]?.closed();
}
function onResponseError(this: HeldResponse): void {
  this[HELD]?.finish(null);
}
function onResponseDrain(this: HeldResponse): void {
  this[HELD]?.drained();
}

/**
 * A held stream: registered (an {@link OpenStream}) as its connect commits, then woken by the bus
 * to push pages until its hold bound, its client or an end. One object with its methods on the
 * prototype: the closures it was (~20 a connect, with their context) were ~1 KiB of every held
 * stream, kept the whole 30 s hold and copied by every scavenge (session 19, gc11). What it hands
 * out as callbacks are three: its wake-up and rewind (the bus's listeners) and its beat (its timer).
 */
export class HeldStream implements OpenStream {
  /** Taken before the renewal is sent: its seen_at (the database's instant) is no earlier. */
  readonly renewedAt: number;
  private finished = false;
  private timer: NodeJS.Timeout | undefined;
  private stalled: NodeJS.Timeout | undefined;
  /** When this connection last wrote (monotonic): a push is a sign of life too, so the keep-alive waits one interval after it. */
  private wroteAt: number;
  /** `open` is written: an end that arrives before it waits for it and follows it, so the client sees why. */
  private opened = false;
  private early: (() => void) | null = null;
  /** Listening on the bus (set once it listens). */
  private listening = false;
  // Pages follow the socket: the next is read only once the last has drained into the kernel,
  // one page per turn of the event loop, so a backlog of any size neither sits in memory nor
  // keeps other clients waiting. `after` is the keyset cursor; `pushed` remembers what this
  // connection sent so a rewind (claims released elsewhere) does not send it twice.
  private box: { agentId: string; sessionId: string } = { agentId: '', sessionId: '' };
  private after = 0;
  /** Made at the first push: most holds push nothing, and an empty Set is 153 bytes kept 30 s. */
  private pushed: Set<string> | null = null;
  /** A released claim puts an entry behind the cursor: the next page starts over. */
  private rewind = false;
  /** The first page, when the renewal statement read it. */
  private first: PendingPage | null = null;
  /** One page at a time, one per turn; a wake-up during a page asks for another pass right after it. */
  private pushing = false;
  private again = false;
  /** The first page is done (read or failed): the hold bound waits for it. */
  private paged = false;
  /** The hold bound came before the first page was done: the stream ends right after it. */
  private boundDue = false;
  private boundAt = 0;
  /** The push trace only: when this stream was first woken since its last page began. */
  private wokenAt = 0n;

  constructor(
    private readonly core: PushCore,
    private readonly signer: Signer,
    private readonly res: HeldResponse,
    readonly sessionId: string,
    readonly consumer: ConsumerIdentity | null,
    private readonly batched: boolean,
  ) {
    this.renewedAt = core.clock.monotonic();
    this.wroteAt = this.renewedAt;
  }

  close(reason: StreamCloseReason): void {
    this.whenOpen(() => this.finish(frame('closed', { reason })));
  }

  end(): void {
    this.whenOpen(() => this.finish(null));
  }

  shutdown(): Promise<void> {
    const res = this.res;
    // Settled at once when the client is already gone (or the response done): made only here, at shutdown.
    const gone =
      res.writableFinished || res.destroyed
        ? Promise.resolve()
        : new Promise<void>((resolve) => {
            res.once('finish', resolve);
            res.once('close', resolve);
          });
    this.whenOpen(() => this.finish(frame('reconnect', { reason: 'shutdown' })));
    return gone;
  }

  private whenOpen(end: () => void): void {
    if (this.opened) end();
    else this.early ??= end;
  }

  finish(last: string | null): void {
    if (this.finished) return;
    this.finished = true;
    this.stopListening();
    clearTimeout(this.timer);
    this.core.streams.remove(this);
    this.core.ends.record(this.sessionId, this.consumer?.home ?? null);
    const res = this.res;
    if (last !== null && !res.destroyed) res.end(last);
    else if (!res.destroyed) res.end();
    // The last event may wait behind a full socket too.
    this.watchStall();
  }

  /** The fault injection's drop: `open` written, then the socket dies mid-stream (no reconnect event). */
  dropAfter(open: string): void {
    this.finished = true;
    this.core.streams.remove(this);
    const res = this.res;
    res.write(open, () => res.socket?.destroy());
  }

  // A reader that takes no bytes while a write waits is dropped after the write timeout,
  // so a stream that stops reading holds at most one page and the socket buffers (never the
  // mailbox), and never the Hub's memory for longer than that.
  private watchStall(): void {
    const res = this.res;
    if (this.stalled !== undefined || res.destroyed || !res.writableNeedDrain) return;
    this.stalled = setTimeout(() => res.destroy(), this.core.config.streamWriteTimeoutSeconds * 1000);
  }

  private write(chunk: string): void {
    const res = this.res;
    if (this.finished || res.destroyed || res.writableEnded) return;
    res.write(chunk);
    this.wroteAt = this.core.clock.monotonic();
    this.watchStall();
  }

  closed(): void {
    this.finish(null);
    clearTimeout(this.stalled);
  }

  drained(): void {
    clearTimeout(this.stalled);
    this.stalled = undefined;
    this.wake();
  }

  /**
   * Written `open`, held from now on: its listeners, its first pass (woken while the renewal was in
   * flight: a pass from the start follows the first page), its beat.
   */
  hold(
    open: string,
    first: PendingPage | null,
    agentId: string,
    hold: number,
    heardMeanwhile: (own: string, principal: string, agentId: string) => boolean,
  ): void {
    const res = this.res;
    this.first = first;
    res.write(open);
    this.wroteAt = this.core.clock.monotonic();
    this.opened = true;
    // The response's close is the client going away (the request's fires once its body is read).
    res[HELD] = this;
    res.on('close', onResponseClose);
    res.on('error', onResponseError);
    res.on('drain', onResponseDrain);
    const early = this.early;
    this.early = null;
    early?.();
    if (this.finished) return;
    this.box = { agentId, sessionId: this.sessionId };
    this.wake();
    // Its own entries, and principal entries it may claim; not the agent's other sessions' mail.
    const own = mailboxKey(agentId, this.sessionId);
    const principal = mailboxKey(agentId, null);
    if (heardMeanwhile(own, principal, agentId)) this.rewound();
    const bus = this.core.bus;
    bus.mail.add(own, this.wake);
    bus.mail.add(principal, this.wake);
    bus.released.add(agentId, this.rewound);
    this.listening = true;
    this.boundAt = this.core.clock.monotonic() + hold;
    this.timer = setTimeout(this.beat, Math.min(this.core.config.keepaliveSeconds * 1000, hold));
  }

  private stopListening(): void {
    if (!this.listening) return;
    this.listening = false;
    const bus = this.core.bus;
    const { agentId, sessionId } = this.box;
    bus.mail.remove(mailboxKey(agentId, sessionId), this.wake);
    bus.mail.remove(mailboxKey(agentId, null), this.wake);
    bus.released.remove(agentId, this.rewound);
  }

  /** The bus's wake-up (and a drained socket's): a pass of pages, or one more after the pass running. */
  private readonly wake = (): void => {
    if (TRACE && this.wokenAt === 0n) this.wokenAt = process.hrtime.bigint();
    void this.push();
  };

  private readonly rewound = (): void => {
    this.rewind = true;
    this.wake();
  };

  // A socket with bytes still queued shows the connection is alive without another comment; so
  // does the `reconnect` event of a bound due within half an interval (30 s holds with 15 s
  // keep-alives: one comment per hold, not two), and a push written within the last half interval:
  // the beat then moves to one interval after that push (at 10,000 streams and ~800 sends/s, ~45% of
  // the holds' comments were written right after a push). Never more than one interval of silence.
  // One timer per stream for all of it: each keep-alive beat, then the bound (a timer a little
  // early for the bound beats once more, shortly).
  private readonly beat = (): void => {
    const now = this.core.clock.monotonic();
    const left = this.boundAt - now;
    if (left <= 0) {
      // The hold bound waits for the connect's first page: whatever committed before the connect is
      // in it however slow the read (a loaded Hub, a queue for the pool), so a stream is never told
      // to reconnect before it was given what was pending when it connected.
      if (this.paged) this.finish(frame('reconnect', { reason: 'hold_bound' }));
      else this.boundDue = true;
      return;
    }
    const keepaliveMs = this.core.config.keepaliveSeconds * 1000;
    let next = keepaliveMs;
    if (now - this.wroteAt < keepaliveMs / 2) next = this.wroteAt + keepaliveMs - now;
    else if (!this.res.writableNeedDrain && left > keepaliveMs / 2) this.write(': keepalive\n\n');
    this.timer = setTimeout(this.beat, Math.min(next, left));
  };

  /** Pages until one comes back short of its bound; run one pass at a time (a wake-up meanwhile asks for one more). */
  private async push(): Promise<void> {
    if (this.pushing) {
      this.again = true;
      return;
    }
    this.pushing = true;
    try {
      do {
        this.again = false;
        try {
          for (;;) {
            let more: boolean;
            try {
              more = await this.page();
            } finally {
              this.firstPaged();
            }
            if (!more) break;
            await new Promise<void>((resolve) => setImmediate(resolve));
          }
          this.core.pushes.worked();
        } catch (e) {
          // The entries stay pending: the next wake-up, or the client's next connect, takes them. Refused while
          // another version's migration holds the tables: the stream stays open (nothing can be sent or acked
          // meanwhile) and every stream reads again once it lets go, or ends if it left the database newer than
          // this code (server.ts); the migration watch logs both, so pushes log neither.
          this.core.pushes.failed(e, `on session ${this.sessionId}`);
        }
      } while (this.again);
    } finally {
      this.pushing = false;
    }
  }

  private firstPaged(): void {
    if (this.paged) return;
    this.paged = true;
    if (this.boundDue) this.finish(frame('reconnect', { reason: 'hold_bound' }));
  }

  /** One page; true when another may follow at once (this one stopped at its bound). */
  private async page(): Promise<boolean> {
    const core = this.core;
    if (this.finished || this.res.writableNeedDrain) return false;
    // The push trace only: the wake-up this page answers, and when it asked for its read.
    const woken = this.wokenAt;
    let queued = 0n;
    if (TRACE) this.wokenAt = 0n;
    if (this.rewind) {
      this.rewind = false;
      this.after = 0;
    }
    const box = this.box;
    // The page reads at most what is left of this turn's budget, and waits for a later turn when
    // nothing is: however many streams are busy, the Hub reaches everyone else's requests. A read
    // a round trip away (PostgreSQL) holds no turn: it is charged to the turn its bytes are sent in.
    const grant = this.batched ? core.turns.unheld() : await core.turns.grant();
    let settled = false;
    try {
      const bound = { limit: PUSH_BATCH, maxBytes: grant.bytes };
      const claimed = async (read: PendingPage) => ({
        read,
        rows: needsClaim(box, read.rows) ? await pushStore(core).write((tx) => claimPage(tx, box, read.rows)) : read.rows,
      });
      // One read outside a unit (SQLite: a statement per keyset arm, which costs less there than
      // one statement merging them; batched: shared with the other streams woken meanwhile); a
      // unit only when the page holds principal entries to claim.
      const after = this.after;
      const { read, rows } = await (async () => {
        if (!this.batched) return pageGate(core).run(async () => claimed(await readSqlitePage(pushStore(core).read, box, after, bound)));
        if (TRACE && this.first === null) queued = process.hrtime.bigint();
        const read = this.first ?? (await pageReader(core).page(box, after, bound));
        this.first = null;
        return needsClaim(box, read.rows) ? pageGate(core).run(() => claimed(read)) : { read, rows: read.rows };
      })();
      if (TRACE)
        for (const r of rows) {
          if (woken !== 0n) hop('hub.woken', r.message_id, woken);
          if (queued !== 0n) hop('hub.queued', r.message_id, queued);
          hop('hub.paged', r.message_id);
        }
      if (read.rows.length > 0) {
        // Past every row read, claimed here or lost to another session.
        this.after = Math.max(this.after, read.rows[read.rows.length - 1]!.seq);
      }
      const pushed = this.pushed;
      const fresh = this.finished ? [] : rows.filter((r) => pushed === null || !pushed.has(r.id));
      settled = true;
      // The page's bytes as read (rows already pushed count too: a rewind is rare).
      await core.turns.settle(grant, fresh.length > 0 ? read.bytes : 0);
      if (this.finished || read.rows.length === 0) return false;
      if (fresh.length > 0) {
        const now = core.clock.now();
        const ids = (this.pushed ??= new Set());
        const messages = fresh.map((r) => {
          ids.add(r.id);
          core.metrics.pushed(now - r.created_at);
          return this.signer.deliveryJson(r, 'stream');
        });
        this.write(`event: entries\ndata: {"messages":[${messages.join(',')}]}\n\n`);
        if (TRACE) for (const r of fresh) hop('hub.written', r.message_id);
      }
      // A page short of its bound saw everything pending: what arrives later wakes this stream.
      return read.more;
    } finally {
      if (!settled) void core.turns.settle(grant, 0);
    }
  }
}

/**
 * `GET /v1/inbox/stream` (§5): the connect presents and renews the session; the hold is
 * bounded so the client's reconnect renews again before the lease runs out. A push is
 * provisional: every entry not yet acknowledged is pushed again on the next connect.
 */
export async function openStream(core: HubCore, store: Store, signer: Signer, res: ServerResponse, sr: StreamRequest): Promise<Reply> {
  // The connect is the renewal the client records: it is durable before `open` says so. Every
  // stream makes one per hold bound, so the common case is one statement (one round trip on
  // PostgreSQL); anything else — a refusal, another holder, a lapse due — is decided in a unit.
  // Presented by its token, the same statement is the credential's read (one round trip, not two).
  // On a store a round trip away it reads the first page too (three in one): what wakes this
  // mailbox while it is in flight may be past the page's snapshot, so it is heard meanwhile.
  // The held stream keeps only what it copies out of `sr`: keeping `sr` would keep its `admit`,
  // and through it the request's whole context (its URL, its store view, the router's closures).
  const { sessionId } = sr;
  const batched = store.kind === 'postgres';
  // Registered as the connect commits, before `open` is written.
  const stream = new HeldStream(core, signer, res, sessionId, sr.consumer, batched);
  const presenting = { consumer: sr.consumer, connect: true, stream };
  // Heard until the stream is registered, a missed renewal's locked unit included: an end another
  // instance commits while that unit runs (it waits for the unit's row lock) can reach this
  // instance before the unit's COMMIT answers, while no stream is registered here to reconcile.
  // Stopped on every way out, a failed statement's too: a hearer left behind collects every key.
  const hearing = batched ? core.bus.hear() : null;
  if (TRACE) hop('ev.connect', sessionId);
  let renewed: Presented | null;
  let presented: Answer<StreamLease>;
  try {
    renewed = await presentStream(core, store, sr.who, sessionId, presenting, batched ? { limit: PUSH_BATCH, maxBytes: core.turns.unheld().bytes } : null);
    if (renewed !== null) presented = good(renewed.row);
    else {
      const agent = 'agentId' in sr.who ? good(sr.who.agentId) : await sr.who.admit();
      if (!agent.ok) return errorReply(agent.error);
      presented = await store.write((tx) => presentSession(core, tx, agent.value, sessionId, presenting));
    }
  } finally {
    hearing?.stop();
  }
  if (TRACE) hop('ev.connected', sessionId);
  if (!presented.ok) return errorReply(presented.error);
  // Another instance ended the session (or took it) after the renewal, heard before this stream
  // was registered: the server's re-check found no stream here, so it is made now, as for one open.
  if (hearing?.session.has(sessionId))
    void reconcileSession(core, sessionId).catch((e: unknown) =>
      core.log(`hub: re-checking session ${sessionId} after its connect failed: ${e instanceof Error ? e.message : String(e)}`),
    );
  if (res.destroyed) {
    // The client left while the renewal committed: nothing to hold open.
    stream.finish(null);
    return { kind: 'handled' };
  }
  const session = presented.value;
  const hold = holdMs(core.config, session.lease_seconds);

  res.writeHead(200, STREAM_HEADERS);
  // No flushHeaders(): the headers go out with `open`, in one write (every stream connects once per hold).
  res.socket?.setNoDelay(true);
  const open = frame('open', {
    session: session.id,
    expires_at: iso(session.expires_at),
    lease_seconds: session.lease_seconds,
    hold_ms: hold,
    stream_max_hold_seconds: core.config.streamMaxHoldSeconds,
  });
  if (sr.drop) {
    stream.dropAfter(open);
    return { kind: 'handled' };
  }
  // Woken while the renewal statement was in flight: that entry may be past its page, so a pass
  // from the start follows the first page (a release puts mail behind the cursor anyway).
  stream.hold(
    open,
    renewed?.page ?? null,
    session.agent_id,
    hold,
    (own, principal, agentId) => hearing !== null && (hearing.mail.has(own) || hearing.mail.has(principal) || hearing.released.has(agentId)),
  );
  return { kind: 'handled' };
}
