import type { Client } from 'pg';
import type { WakeTopic } from '../sql.js';
import { TRACE } from '../../../util/trace.js';
import type { FailureLog } from '../failure-log.js';
import { CHANNEL, notifyPayloads, traceMailboxes } from './wake-payload.js';

export interface NotifierOptions {
  /** A fresh, unconnected client each time (pg's Client is single-use). */
  connect: () => Client;
  /** This instance's id: the head of its payloads, so its own listener drops them. */
  instance: string;
  /** The deployment's clock (ms): each payload's sent-at, for the lag metric. */
  now: () => number;
  /** How long to wait before re-opening a dropped connection. */
  retryMs: number;
  /** A drop, or a re-open that failed (one every `retryMs` while the database is away): logged when they start and stop. */
  failures: Pick<FailureLog, 'failed' | 'worked'>;
}

export interface Notifier {
  /**
   * Tell the other instances of `wakes` (already committed). Settles once a NOTIFY transaction
   * carrying them committed — with every other wake-up queued while the batch before it was under
   * way — or once the notifier is closed. Never rejects: a failed batch goes again on a fresh connection.
   */
  send(wakes: ReadonlyArray<readonly [WakeTopic, string]>): Promise<void>;
  close(): Promise<void>;
}

/**
 * One statement sends a whole batch: its payloads (each under NOTIFY's cap) as one array parameter,
 * in one transaction, so a batch takes PostgreSQL's notify lock once.
 */
const BATCH = { name: 'oh_hai_notify', text: `SELECT pg_notify('${CHANNEL}', p) FROM unnest(CAST($1 AS TEXT[])) AS p` };

/**
 * The wake-ups of committed units, sent to the other instances on ONE connection, in batches.
 * PostgreSQL serialises the commits of transactions that NOTIFY (a database-wide lock from the
 * commit's start to its end), so a NOTIFY in each send's own commit made the sends of every
 * instance commit one at a time. Here the sends commit without it, and each batch — every wake-up
 * committed while the batch before was under way — is one NOTIFY transaction (group commit).
 */
export function notifier(o: NotifierOptions): Notifier {
  let closed = false;
  let current: { client: Client; drop: (why: string) => void } | null = null;
  let timer: NodeJS.Timeout | undefined;
  let queued: Array<readonly [WakeTopic, string]> = [];
  let waiting: Array<() => void> = [];
  let flushing = false;
  // Called once a connection is up (or the notifier closed): what a batch waiting for one waits on.
  let reopened: (() => void) | null = null;

  const open = async (): Promise<void> => {
    if (closed) return;
    const c = o.connect();
    let gone = false;
    const drop = (why: string) => {
      if (gone || closed) return;
      gone = true;
      if (current?.client === c) current = null;
      o.failures.failed(new Error(`dropped (${why}); re-opening every ${o.retryMs} ms`));
      c.end().catch(() => {});
      timer = setTimeout(() => void open(), o.retryMs);
    };
    c.on('error', (e) => drop(e.message));
    c.on('end', () => drop('connection ended'));
    try {
      await c.connect();
    } catch (e) {
      drop(e instanceof Error ? e.message : String(e));
      return;
    }
    if (gone || closed) return;
    o.failures.worked();
    current = { client: c, drop };
    reopened?.();
  };

  const settle = () => {
    const done = waiting;
    waiting = [];
    queued = [];
    for (const d of done) d();
  };

  async function flush(): Promise<void> {
    if (flushing) return;
    flushing = true;
    while (queued.length > 0 && !closed) {
      const now = current;
      if (now === null) {
        await new Promise<void>((r) => (reopened = r));
        reopened = null;
        continue;
      }
      const wakes = queued;
      const done = waiting;
      queued = [];
      waiting = [];
      try {
        const values = [notifyPayloads(o.instance, o.now(), wakes)];
        // Stamped before the write: the write wakes the backend, and the kernel may run it (and the
        // listeners it signals) before this process again, so a stamp after it came up to ms late.
        if (TRACE) traceMailboxes('ev.batched', wakes);
        await now.client.query({ ...BATCH, values });
      } catch (e) {
        // The whole batch again on the next connection: a payload heard twice only wakes twice.
        queued = wakes.concat(queued);
        waiting = done.concat(waiting);
        now.drop(e instanceof Error ? e.message : String(e));
        continue;
      }
      for (const d of done) d();
    }
    flushing = false;
    if (closed) settle();
  }

  void open();

  return {
    send(wakes) {
      if (closed || wakes.length === 0) return Promise.resolve();
      const sent = new Promise<void>((r) => waiting.push(r));
      queued.push(...wakes);
      void flush();
      return sent;
    },
    async close() {
      closed = true;
      clearTimeout(timer);
      reopened?.();
      settle();
      await current?.client.end().catch(() => {});
    },
  };
}
