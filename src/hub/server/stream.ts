import type { ServerResponse } from 'node:http';
import type { ConsumerIdentity, Delivery } from '../contract/index.js';
import { holdMs } from './config.js';
import type { HubCore } from './core.js';
import type { Signer } from './delivery.js';
import { takePending } from './entries.js';
import { errorReply, type Reply } from './http.js';
import { iso } from './ids.js';
import type { OpenStream, StreamCloseReason } from './registry.js';
import { endedError, presentSession, sessionById, streamEnded } from './sessions.js';

/** How many deliveries one `entries` event carries at most. */
const PUSH_BATCH = 100;

export interface StreamRequest {
  agentId: string;
  sessionId: string;
  consumer: ConsumerIdentity | null;
  /** Fault injection: send `open`, then destroy the socket. */
  drop: boolean;
}

const frame = (event: string, data: unknown): string => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;

/**
 * `GET /v1/inbox/stream` (§5): the connect presents and renews the session; the hold is
 * bounded so the client's reconnect renews again before the lease runs out. A push is
 * provisional: every entry not yet acknowledged is pushed again on the next connect.
 */
export async function openStream(core: HubCore, signer: Signer, res: ServerResponse, sr: StreamRequest): Promise<Reply> {
  let finished = false;
  const cleanups: Array<() => void> = [];
  const finish = (last: string | null) => {
    if (finished) return;
    finished = true;
    for (const c of cleanups) c();
    core.streams.remove(handle);
    streamEnded(core, sr.sessionId, sr.consumer?.home ?? null);
    if (last !== null && !res.destroyed) res.end(last);
    else if (!res.destroyed) res.end();
  };
  const write = (chunk: string) => {
    if (!finished && !res.destroyed && !res.writableEnded) res.write(chunk);
  };
  // Registered first, so it settles even when the client is already gone by the time it is awaited.
  const gone = new Promise<void>((resolve) => {
    res.once('finish', resolve);
    res.once('close', resolve);
  });
  const handle: OpenStream = {
    sessionId: sr.sessionId,
    consumer: sr.consumer,
    close: (reason: StreamCloseReason) => finish(frame('closed', { reason })),
    end: () => finish(null),
    shutdown: () => {
      finish(frame('reconnect', { reason: 'shutdown' }));
      return gone;
    },
  };

  // The connect is the renewal the client records: it is durable before `open` says so.
  const presented = await core.commits.run(() => presentSession(core, sr.agentId, sr.sessionId, { consumer: sr.consumer, connect: true, stream: handle }));
  if (!presented.ok) return errorReply(presented.error);
  if (res.destroyed) {
    // The client left while the renewal committed: nothing to hold open.
    finish(null);
    return { kind: 'handled' };
  }
  // A unit later in the same batch may have ended the session before this stream was registered to hear it.
  const session = sessionById(core, sr.sessionId) ?? presented.value;
  if (session.state !== 'active') {
    const ended = endedError<never>(session);
    if (!ended.ok) return errorReply(ended.error);
  }
  const hold = holdMs(core.config, session.lease_seconds);

  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-store',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  });
  res.flushHeaders();
  res.socket?.setNoDelay(true);
  const open = frame('open', {
    session: session.id,
    expires_at: iso(session.expires_at),
    lease_seconds: session.lease_seconds,
    hold_ms: hold,
    stream_max_hold_seconds: core.config.streamMaxHoldSeconds,
  });
  if (sr.drop) {
    // Fault injection: the client sees `open`, then the socket dies mid-stream (no reconnect event).
    finished = true;
    res.write(open, () => res.socket?.destroy());
    return { kind: 'handled' };
  }
  core.streams.add(handle);
  res.write(open);
  // The response's close is the client going away (the request's fires once its body is read).
  res.on('close', () => finish(null));
  res.on('error', () => finish(null));

  const pushed = new Set<string>();
  const push = () => {
    while (!finished) {
      const rows = takePending(core, sr.agentId, sr.sessionId, PUSH_BATCH, pushed);
      if (rows.length === 0) return;
      const messages: Delivery[] = rows.map((r) => {
        pushed.add(r.id);
        return signer.deliver(r, 'stream');
      });
      write(frame('entries', { messages }));
      if (rows.length < PUSH_BATCH) return;
    }
  };
  push();
  cleanups.push(core.bus.mail.on(sr.agentId, push));

  const keepalive = setInterval(() => write(': keepalive\n\n'), core.config.keepaliveSeconds * 1000);
  const bound = setTimeout(() => finish(frame('reconnect', { reason: 'hold_bound' })), hold);
  cleanups.push(() => clearInterval(keepalive), () => clearTimeout(bound));
  return { kind: 'handled' };
}
