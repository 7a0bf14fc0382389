import type { Client, ClientConfig } from 'pg';
import type { WakeTopic } from '../sql.js';
import { CHANNEL, parsePayload } from './store.js';

export interface ListenerOptions {
  /** A fresh, unconnected client each time (pg's Client is single-use). */
  connect: () => Client;
  instance: string;
  /** A wake-up another instance committed. */
  wake: (topic: WakeTopic, key: string) => void;
  /** The listener (re)connected after a drop: whatever was notified meanwhile is lost, so re-check everything once. */
  resync: () => void;
  /** How long to wait before re-opening a dropped listener. */
  retryMs: number;
  log: (line: string) => void;
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

  const open = async (): Promise<void> => {
    if (closed) return;
    const c = o.connect();
    client = c;
    let gone = false;
    const drop = (why: string) => {
      if (gone || closed) return;
      gone = true;
      o.log(`hub: the database listener dropped (${why}); re-opening in ${o.retryMs} ms`);
      c.removeAllListeners('notification');
      c.end().catch(() => {});
      timer = setTimeout(() => void open(), o.retryMs);
    };
    c.on('error', (e) => drop(e.message));
    c.on('end', () => drop('connection ended'));
    c.on('notification', (n) => {
      if (n.channel !== CHANNEL || n.payload === undefined) return;
      const parsed = parsePayload(n.payload);
      if (!parsed || parsed.instance === o.instance) return;
      o.heard?.(parsed.sentAt);
      for (const [topic, key] of parsed.wakes) o.wake(topic, key);
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
      o.log('hub: the database listener is back; every stream re-checks its mailbox');
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
