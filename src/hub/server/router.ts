import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Work } from './work.js';
import type { Store } from './sql.js';
import { TRACE } from '../../util/trace.js';
import { authenticate, checkKind, tokenInUrl, type Authenticated, type Caller, type Needs } from './auth.js';
import type { HubCore } from './core.js';
import type { RequestClass, RequestFaults } from './faults.js';
import { DATABASE_MIGRATING, MIGRATING_RETRY_AFTER_SECONDS, STORE_CLOSED } from './database-errors.js';
import { errorReply, fault, readBody, send, type Answer, type Body, type ErrorReply, type Reply } from './http.js';

export interface RouteContext {
  req: IncomingMessage;
  res: ServerResponse;
  url: URL;
  /** Decoded path parameters, in order. */
  params: string[];
  /** The authenticated caller; `{kind: 'human'}` is never assumed for `needs: 'none'` routes. */
  caller: Caller | null;
  /** Whether agent messaging is on, read with the credential; null on routes that need none. */
  messaging: boolean | null;
  /**
   * Let the caller in as the router does for every other route (the credential, then the token
   * kind `needs`): for a route that reads the credential itself, on each path its own statement
   * did not let the caller in.
   */
  authenticate(): Promise<Answer<Authenticated>>;
  body: Body;
  /** The store as this request's work (its route pattern, and lane): every statement of the request goes through it. */
  store: Store;
  /** This request's work: the push trace's instants (`at`). */
  work: Work;
  faults: RequestFaults;
  /** Aborts when the client goes away (held long-polls stop waiting). */
  signal: AbortSignal;
}

export interface Route {
  method: 'GET' | 'POST' | 'PATCH';
  /** Path segments; `:x` is a parameter. */
  path: string;
  needs: Needs;
  cls: RequestClass;
  /**
   * The handler reads the credential inside its own first statement (the stream connect: ONE
   * round trip for the credential and the lease renewal): the router does not authenticate first,
   * `caller` and `messaging` stay null, and the handler calls `authenticate()` wherever its
   * statement did not let the caller in.
   */
  ownCredential?: true;
  handle(ctx: RouteContext): Reply | Promise<Reply>;
}

/**
 * A request's {@link RouteContext}. A class, not an object literal: its `signal` accessor is on the
 * prototype, where a literal's own accessor leaves V8 the object in dictionary mode (945 bytes a
 * request against 129 for one of data properties, Node 20).
 */
class Context implements RouteContext {
  constructor(
    readonly req: IncomingMessage,
    readonly res: ServerResponse,
    readonly url: URL,
    readonly params: string[],
    readonly caller: Caller | null,
    readonly messaging: boolean | null,
    readonly authenticate: () => Promise<Answer<Authenticated>>,
    readonly body: Body,
    readonly store: Store,
    readonly work: Work,
    readonly faults: RequestFaults,
    private readonly signalOf: () => AbortSignal,
  ) {}

  get signal(): AbortSignal {
    return this.signalOf();
  }
}

/** Handles paths outside the API (the web inbox); resolves true when it answered. */
export type ExtraRoutes = (req: IncomingMessage, res: ServerResponse) => boolean | Promise<boolean>;

interface Compiled {
  route: Route;
  segments: string[];
  /** The route's work and its store view, made at its first request (untraced: see {@link Scope}). */
  scope: Scope | null;
}

/**
 * A request's work and the store as that work. Untraced, one per route (and one for requests not
 * matched yet), shared by all its requests: a store view is ~800 bytes and eight closures, made per
 * request until session 19 (two per send, with its stream's connect, at ~1,500 requests a second).
 * Traced, one per request: its work carries the request's own instants.
 */
interface Scope {
  work: Work;
  store: Store;
}

/** The path parameters of `parts` on a route's `segments`, or null when they do not match (run for every route a request tries). */
function match(segments: string[], parts: string[]): string[] | null {
  if (segments.length !== parts.length) return null;
  const params: string[] = [];
  for (let i = 0; i < segments.length; i++) {
    const seg = segments[i]!;
    const part = parts[i]!;
    if (seg.startsWith(':')) {
      if (part === '') return null;
      params.push(part);
    } else if (seg !== part) return null;
  }
  return params;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The answer while this instance stops: another instance (or this one, restarted) takes the retry. */
export const stopping = (): ErrorReply => ({
  kind: 'error',
  error: {
    status: 503,
    code: 'unavailable',
    message: 'this Hub instance is stopping; retry (the balancer sends it to another instance)',
    headers: { 'retry-after': '1', connection: 'close' },
  },
});

/**
 * The request pipeline: token-in-URL refusal, route match (404/405), injected faults,
 * auth and token kind (401/403), capped JSON body (413/400), then the handler. A
 * handler's unexpected throw is answered as a 500 with the §0 shape and logged, never
 * a dropped connection or a crash.
 */
export function createRouter(core: HubCore, routes: Route[], extra: ExtraRoutes | null, log: (line: string) => void) {
  const compiled: Compiled[] = routes.map((route) => ({ route, segments: route.path.split('/').slice(1), scope: null }));
  // Named by its route's pattern once matched (`other` until then): never the ids in the path, so
  // metrics and logs stay bounded and anonymous.
  const unmatched = (): Scope => {
    const work: Work = TRACE ? { name: 'other', lane: 'request', at: { arrived: process.hrtime.bigint() } } : { name: 'other', lane: 'request' };
    return { work, store: core.store.as(work) };
  };
  let other: Scope | null = null;
  /** The scope of a request to route `c`: its own when traced (the one it started with, renamed), else the route's. */
  const matched = (c: Compiled, current: Scope): Scope => {
    const name = `${c.route.method} ${c.route.path}`;
    // A stream connect draws from stream work's share of the pool, from its credential check on.
    const lane = c.route.cls === 'stream' ? 'connect' : 'request';
    if (TRACE) {
      current.work.name = name;
      current.work.lane = lane;
      return current;
    }
    if (c.scope === null) {
      const work: Work = { name, lane };
      c.scope = { work, store: core.store.as(work) };
    }
    return c.scope;
  };

  return async function dispatch(req: IncomingMessage, res: ServerResponse): Promise<void> {
    // Made when a handler first asks for the signal (a hold does), and aborted only when the
    // client leaves before its answer is out: most requests never need one, and an abort
    // builds a DOMException with a stack.
    let controller: AbortController | null = null;
    let gone = false;
    const abort = () => {
      gone = true;
      controller?.abort();
    };
    const signal = (): AbortSignal => {
      if (controller === null) {
        controller = new AbortController();
        if (gone) controller.abort();
      }
      return controller.signal;
    };
    const started = core.clock.monotonic();
    // The request's scope, replaced by its route's once matched.
    const at = { scope: TRACE ? unmatched() : (other ??= unmatched()) };
    res.on('close', () => {
      if (!res.writableFinished) abort();
      const route = at.scope.work.name;
      core.metrics.request(route, res.statusCode);
      core.access?.({
        method: req.method ?? '',
        route,
        status: res.statusCode,
        ms: Math.round(core.clock.monotonic() - started),
        client: core.clientAddress(req),
        remote: req.socket.remoteAddress ?? null,
        forwardedFor: typeof req.headers['x-forwarded-for'] === 'string' ? req.headers['x-forwarded-for'] : null,
      });
    });
    // A client that vanishes mid-request surfaces as a stream error; it is not the Hub's fault and must never crash it.
    req.on('error', abort);
    res.on('error', abort);
    try {
      const reply = await route(req, res, signal, at);
      if (reply && reply.kind !== 'handled') send(res, reply);
    } catch (e) {
      if ((e as { code?: unknown }).code === STORE_CLOSED) {
        // Outlived the shutdown's wait: refused like a request that arrived while stopping.
        if (!res.headersSent) send(res, stopping());
        else res.destroy();
        return;
      }
      if ((e as { code?: unknown }).code === DATABASE_MIGRATING) {
        // Another instance's migration holds the tables: refused at once, retried once it lets go (postgres/migrating.ts).
        if (!res.headersSent)
          send(
            res,
            errorReply({
              status: 503,
              code: 'unavailable',
              message: (e as Error).message,
              headers: { 'retry-after': String(MIGRATING_RETRY_AFTER_SECONDS) },
            }),
          );
        else res.destroy();
        return;
      }
      log(`hub: internal error on ${req.method} ${(req.url ?? '').split('?')[0]}: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
      if (!res.headersSent) send(res, fault(500, 'internal', 'the Hub failed to handle this request; the error is in its log'));
      else res.destroy();
    }
  };

  async function route(req: IncomingMessage, res: ServerResponse, signal: () => AbortSignal, at: { scope: Scope }): Promise<Reply | null> {
    let store = at.scope.store;
    let url: URL;
    try {
      url = new URL(req.url ?? '/', 'http://hub.invalid');
    } catch {
      return fault(400, 'invalid_request', 'the request target is not a valid URL');
    }
    if (await tokenInUrl(core, store.read, url)) {
      return fault(
        400,
        'token_in_url',
        'a credential was put in the URL; send it only as "Authorization: Bearer <token>" (and rotate it: URLs end up in logs)',
      );
    }
    let parts: string[];
    try {
      parts = url.pathname.split('/').slice(1).map(decodeURIComponent);
    } catch {
      return fault(400, 'invalid_request', 'the request path is not valid percent-encoding');
    }
    // The route of this method and path; only a miss looks at the other methods' (405).
    let hit: { c: Compiled; params: string[] } | undefined;
    for (const c of compiled) {
      const params = c.route.method === req.method ? match(c.segments, parts) : null;
      if (params !== null) {
        hit = { c, params };
        break;
      }
    }
    if (!hit) {
      const candidates = compiled.filter((c) => match(c.segments, parts) !== null);
      if (candidates.length > 0) {
        const allow = [...new Set(candidates.map((c) => c.route.method))].join(', ');
        req.resume();
        return errorReply({
          status: 405,
          code: 'method_not_allowed',
          message: `${req.method} is not allowed on ${url.pathname}; use ${allow}`,
          headers: { allow },
        });
      }
      if (extra && (await extra(req, res))) return null;
      req.resume();
      return fault(404, 'not_found', `no such endpoint: ${req.method} ${url.pathname}`);
    }
    const r = hit.c.route;
    at.scope = matched(hit.c, at.scope);
    store = at.scope.store;
    const faults = core.faults.forRequest(r.cls);
    if (faults.delayMs > 0) await sleep(faults.delayMs);
    if (faults.status !== null) {
      req.resume();
      const code = faults.status === 503 ? 'unavailable' : faults.status === 429 ? 'rate_limited' : 'injected_fault';
      return errorReply({
        status: faults.status,
        code,
        message: `fault injection: this ${r.cls} request fails with ${faults.status}`,
        ...(faults.status === 429 ? { headers: { 'retry-after': '1' } } : {}),
      });
    }
    if (faults.drop && r.cls !== 'stream') {
      req.socket.destroy();
      return null;
    }
    let caller: Caller | null = null;
    let messaging: boolean | null = null;
    const letIn = async (): Promise<Answer<Authenticated>> => {
      const who = await authenticate(core, store.read, req);
      if (!who.ok) return who;
      const allowed = checkKind(who.value.caller, r.needs);
      return allowed.ok ? who : allowed;
    };
    if (r.needs !== 'none' && !r.ownCredential) {
      const who = await letIn();
      if (!who.ok) return errorReply(who.error);
      caller = who.value.caller;
      messaging = who.value.messaging;
    }
    let body: Body = { kind: 'none' };
    if (req.method === 'POST' || req.method === 'PATCH') {
      const read = await readBody(req, core.config.maxBodyBytes);
      if (!read.ok) return errorReply(read.error);
      body = read.value;
    } else req.resume();
    return r.handle(new Context(req, res, url, hit.params, caller, messaging, letIn, body, store, at.scope.work, faults, signal));
  }
}
