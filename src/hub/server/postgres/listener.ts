import type { Client, ClientConfig } from 'pg';
import type { WakeTopic } from '../sql.js';
import { TRACE } from '../../../util/trace.js';
import type { FailureLog } from '../failure-log.js';
import { CHANNEL, parsePayload, traceMailboxes } from './wake-payload.js';

export interface ListenerOptions {
  /** A fresh, unconnected client each time (pg's Client is single-use). */
  connect: () => Client;
  instance: string;
  /** A wake-up another instance committed; `family`: a `mail` key of a whole agent, every mailbox of it (an earlier build's). */
  wake: (topic: WakeTopic, key: string, family: boolean) => void;
  /**
   * After each notification's wake-ups: deliver them now, as after this instance's own commits. Left
   * to the bus's next turn, a stream woken here waited for the rest of the loop's poll phase, and its
   * page's read (PageReader: asked at the end of the turn it is queued in) for a whole turn more.
   */
  committed: () => void;
  /** The listener (re)connected after a drop: whatever was notified meanwhile is lost, so re-check everything once. */
  resync: () => void;
  /** How long to wait before re-opening a dropped listener. */
  retryMs: number;
  /** A drop, or a re-open that failed (one every `retryMs` while the database is away): logged when they start and stop. */
  failures: Pick<FailureLog, 'failed' | 'worked'>;
  /** A notification arrived that another instance sent at `sentAt` (deployment clock), for the lag metric. */
  heard?: (sentAt: number) => void;
}

export interface Listener {
  /** Resolves once LISTEN is in place the first time. */
  ready: Promise<void>;
  close(): Promise<void>;
}

export type { ClientConfig };

/**
 * What one payload wakes here. A send wakes its agent's key (drains wait there) and its
 * mailbox's (`<agent>#<session>`, `<agent>#` for principal mail: streams wait there), so a
 * stream here wakes only for mail it can take. A payload with an agent's key and none of its
 * mailboxes' comes from a Hub of an earlier build: every mailbox of that agent may have mail.
 */
export function remoteWakes(wakes: ReadonlyArray<readonly [WakeTopic, string]>): Array<{ topic: WakeTopic; key: string; family: boolean }> {
  const withMailbox = new Set(wakes.filter(([t, k]) => t === 'mail' && k.includes('#')).map(([, k]) => k.slice(0, k.indexOf('#'))));
  return wakes.map(([topic, key]) => ({ topic, key, family: topic === 'mail' && !key.includes('#') && !withMailbox.has(key) }));
}

/**
 * LISTEN for other instances' wake-ups: a hint only. Payloads carry ids; the durable
 * tables deliver. NOTIFY is lost while no one listens, so a dropped listener is re-opened
 * and every waiter of this instance re-checks its mailbox once.
 */
export function listen(o: ListenerOptions): Listener {
  let closed = false;
  let client: Client | null = null;
  let timer: NodeJS.Timeout | undefined;
  let first = true;
  let resolveReady!: () => void;
  const ready = new Promise<void>((r) => (resolveReady = r));
  // A payload starts with its instance and a space (notifyPayloads).
  const own = `${o.instance} `;

  const open = async (): Promise<void> => {
    if (closed) return;
    const c = o.connect();
    client = c;
    let gone = false;
    const drop = (why: string) => {
      if (gone || closed) return;
      gone = true;
      o.failures.failed(new Error(`dropped (${why}); re-opening every ${o.retryMs} ms`));
      c.removeAllListeners('notification');
      c.end().catch(() => {});
      timer = setTimeout(() => void open(), o.retryMs);
    };
    c.on('error', (e) => drop(e.message));
    c.on('end', () => drop('connection ended'));
    c.on('notification', (n) => {
      // This instance's own payloads come back too (it woke its own waiters at its COMMIT): with
      // one instance that is every payload, so they are dropped before they are parsed.
      if (n.channel !== CHANNEL || n.payload === undefined || n.payload.startsWith(own)) return;
      const parsed = parsePayload(n.payload);
      if (!parsed) return;
      if (TRACE) traceMailboxes('ev.heard', parsed.wakes);
      o.heard?.(parsed.sentAt);
      for (const w of remoteWakes(parsed.wakes)) o.wake(w.topic, w.key, w.family);
      o.committed();
    });
    try {
      await c.connect();
      await c.query(`LISTEN ${CHANNEL}`);
    } catch (e) {
      drop(e instanceof Error ? e.message : String(e));
      return;
    }
    if (first) {
      first = false;
      resolveReady();
    } else {
      o.failures.worked();
      o.resync();
    }
  };
  void open();

  return {
    ready,
    async close() {
      closed = true;
      clearTimeout(timer);
      await client?.end().catch(() => {});
    },
  };
}
