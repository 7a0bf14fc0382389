import type { Dispatcher } from 'undici';
import { Client } from './undici.js';

/**
 * One keep-alive connection per stream, reused by its reconnects. A stream reconnects at every
 * hold bound (MA2H §5), at once. Through the Agent's pool that reconnect would usually open a
 * second connection: undici frees a connection one turn of the event loop after its answer ends,
 * so the pool finds the stream's only connection still busy. The second connection then idles a
 * whole hold, longer than a Hub keeps an idle connection (the reference Hub: 10 s; a 30 s hold),
 * and every reconnect costs the Hub a TCP accept and set-up. A Client of its own queues the
 * reconnect behind the answer that just ended and sends it on the same socket. Streams open at once
 * each take their own; one that ends gives its connection back for the next stream.
 */
export class StreamConnections {
  private readonly idle: Client[] = [];
  private readonly all = new Set<Client>();
  private closed = false;

  constructor(private readonly origin: string) {}

  async run<T>(stream: (dispatcher: Dispatcher) => Promise<T>): Promise<T> {
    const client = this.idle.pop() ?? this.make();
    try {
      return await stream(client);
    } finally {
      if (!this.closed) this.idle.push(client);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    this.idle.length = 0;
    await Promise.all([...this.all].map((c) => c.close()));
  }

  private make(): Client {
    const client = new Client(this.origin);
    // After close(), as through a closed Agent: the request fails (a network failure), nothing is left open.
    if (this.closed) void client.close();
    else this.all.add(client);
    return client;
  }
}
