import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Json } from './canonical.js';
import { freshToken } from './ids.js';
import { defaultKnobs, type JsonStyle, type PeerKnobs, type SseStyle } from './knobs.js';
import { bearer, readJsonBody } from './request.js';
import { header, ROUTES, type Caller, type Ctx, type Reply, type Route } from './routes.js';
import { PeerStore, Refusal } from './store.js';
import { emit, errorBody, withExtras } from './wire.js';

/** One request as the peer Hub saw it (never a token). */
export interface RequestRecord {
  /** Real clock (ms) when it arrived and when its response closed. */
  at: number;
  closedAt: number | null;
  method: string;
  /** The raw request target, as sent. */
  target: string;
  route: string;
  status: number | null;
  consumer: string | null;
  /** How a stream ended: `hold_bound`, `closed:<reason>`, or `client` (the client went away first). */
  streamEnd: string | null;
  /** The JSON request body, when the route read one. */
  body: { [key: string]: Json } | null;
  caller: 'agent' | 'human' | 'none' | 'invalid';
  agentId: string | null;
}

export interface PeerHub {
  url: string;
  knobs: PeerKnobs;
  store: PeerStore;
  humanToken: string;
  /** Every request so far, oldest first. */
  requests: RequestRecord[];
  /** Requests that carried a known token in the URL (§0: never). */
  tokenInUrl: string[];
  addAgent(opts?: { label?: string; id?: string; source?: 'account' | 'config' }): { id: string; token: string };
  close(): Promise<void>;
}

export type PeerHubOptions = Partial<Omit<PeerKnobs, 'sse' | 'json'>> & { sse?: Partial<SseStyle>; json?: Partial<JsonStyle> };

/** Split a path into decoded segments; an undecodable one is a bad request. */
function segments(pathname: string): string[] | null {
  try {
    return pathname.split('/').slice(1).map(decodeURIComponent);
  } catch {
    return null;
  }
}

function match(route: Route, segs: string[], rawPath: string, knobs: PeerKnobs): string[] | null {
  if (route.path === 'stream') return knobs.streamPath !== null && rawPath === knobs.streamPath ? [] : null;
  if (route.path.length !== segs.length) return null;
  const params: string[] = [];
  for (let i = 0; i < segs.length; i++) {
    const want = route.path[i]!;
    if (want.startsWith(':')) params.push(segs[i]!);
    else if (want !== segs[i]) return null;
  }
  return params;
}

/** Start the peer Hub on 127.0.0.1, an ephemeral port, in this process. */
export async function startPeerHub(opts: PeerHubOptions = {}): Promise<PeerHub> {
  const base = defaultKnobs(opts.signingKey ?? randomBytes(18).toString('base64url'));
  const knobs: PeerKnobs = { ...base, ...opts, sse: { ...base.sse, ...opts.sse }, json: { ...base.json, ...opts.json } };
  const store = new PeerStore(knobs);
  const humanToken = freshToken();
  store.tokens.set(humanToken, { kind: 'human' });
  const requests: RequestRecord[] = [];
  const tokenInUrl: string[] = [];
  const holds = new Set<() => void>();
  const sockets = new Set<Socket>();

  const sendJson = (res: ServerResponse, status: number, body: { [key: string]: Json }, headers: { [name: string]: string } = {}): void => {
    const text = emit(withExtras(body, knobs.json, 'response'), knobs.json);
    res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', date: new Date(store.now()).toUTCString(), ...headers });
    res.end(text);
  };
  const refuse = (res: ServerResponse, r: Refusal, headers: { [name: string]: string } = {}): void =>
    sendJson(res, r.status, errorBody(r.code, r.message, r.details, knobs.json), headers);

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const target = req.url ?? '/';
    const rec: RequestRecord = {
      at: Date.now(),
      closedAt: null,
      method: req.method ?? '',
      target,
      route: 'none',
      status: null,
      consumer: header(req, 'ma2h-consumer') ?? null,
      body: null,
      streamEnd: null,
      caller: 'none',
      agentId: null,
    };
    requests.push(rec);
    res.on('close', () => {
      rec.status = res.statusCode;
      rec.closedAt = Date.now();
    });
    store.sweep();

    const url = new URL(target, 'http://peer.invalid');
    let decodedTarget = target;
    try {
      decodedTarget = decodeURIComponent(target);
    } catch {
      // an undecodable target is judged by its raw text
    }
    for (const t of store.tokens.keys()) {
      if (target.includes(t) || decodedTarget.includes(t)) {
        tokenInUrl.push(url.pathname);
        return refuse(res, new Refusal(400, 'token_in_url', 'a token is never put in a URL; send it as Authorization: Bearer'));
      }
    }
    const segs = segments(url.pathname);
    if (segs === null) return refuse(res, new Refusal(400, 'invalid_request', 'the path is not valid percent-encoding'));
    const candidates = ROUTES.map((route) => ({ route, params: match(route, segs, url.pathname, knobs) })).filter((m) => m.params !== null);
    const hit = candidates.find((m) => m.route.method === req.method);
    if (hit === undefined) {
      return candidates.length > 0
        ? refuse(res, new Refusal(405, 'method_not_allowed', `${req.method} is not allowed on ${url.pathname}`), {
            allow: candidates.map((m) => m.route.method).join(', '),
          })
        : refuse(res, new Refusal(404, 'not_found', `no route ${url.pathname}`));
    }
    const { route } = hit;
    rec.route = route.name;

    const fault = knobs.fault?.({ method: req.method ?? '', route: route.name, path: url.pathname, query: url.searchParams }) ?? null;
    if (fault !== null && !('drop' in fault && fault.drop === 'after')) {
      if ('drop' in fault) {
        req.socket.destroy();
        return;
      }
      const headers: { [name: string]: string } = fault.retryAfterSeconds !== undefined ? { 'retry-after': String(fault.retryAfterSeconds) } : {};
      return refuse(res, new Refusal(fault.status, fault.code ?? (fault.status >= 500 ? 'unavailable' : 'rate_limited'), 'injected by the peer hub'), headers);
    }

    let caller: Caller | null = null;
    if (route.auth !== 'none') {
      const token = bearer(req);
      const who = token === null ? null : store.authenticate(token);
      if (who === null) {
        rec.caller = 'invalid';
        return refuse(res, new Refusal(401, 'unauthorized', token === null ? 'no bearer token' : 'unknown or revoked token'), { 'www-authenticate': 'Bearer' });
      }
      caller = who;
      rec.caller = who.kind;
      if (who.kind === 'agent') rec.agentId = who.agent.id;
      if ((route.auth === 'agent' && who.kind !== 'agent') || (route.auth === 'human' && who.kind !== 'human')) {
        return refuse(res, new Refusal(403, 'forbidden', `this endpoint takes ${route.auth === 'agent' ? 'an agent' : "the account's human"} token`));
      }
    }

    const ctx: Ctx = {
      req,
      res,
      params: hit.params!,
      query: url.searchParams,
      store,
      knobs,
      caller,
      body: async () => {
        const b = await readJsonBody(req);
        if (!(b instanceof Refusal)) rec.body = b;
        return b;
      },
      streamEnded: (how) => {
        rec.streamEnd ??= how;
      },
      hold: (cleanup) => {
        holds.add(cleanup);
        return () => holds.delete(cleanup);
      },
    };
    const reply: Reply = await route.handle(ctx);
    if (fault !== null) {
      req.socket.destroy();
      return;
    }
    if (reply === 'streaming' || res.headersSent || res.destroyed) return;
    if (reply instanceof Refusal) return refuse(res, reply);
    sendJson(res, reply.status, reply.body, reply.headers);
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((e: unknown) => {
      if (!res.headersSent) refuse(res, new Refusal(500, 'internal', `peer hub bug: ${e instanceof Error ? e.message : String(e)}`));
      else res.destroy();
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const sweeper = setInterval(() => store.sweep(), 50);
  const port = (server.address() as AddressInfo).port;

  return {
    url: `http://127.0.0.1:${port}`,
    knobs,
    store,
    humanToken,
    requests,
    tokenInUrl,
    addAgent(o) {
      const { agent, token } = store.addAgent(o);
      return { id: agent.id, token };
    },
    async close() {
      clearInterval(sweeper);
      for (const h of [...holds]) h();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const s of sockets) s.destroy();
      await closed;
    },
  };
}
