import type { IncomingMessage, ServerResponse } from 'node:http';
import { canonicalJson, type Json } from './canonical.js';
import type { PeerKnobs } from './knobs.js';
import { fields, parseConsumer, queryNumber, readFields } from './request.js';
import { SseWriter } from './sse.js';
import { iso, messagingDisabled, Refusal, type AgentRec, type HeldStream, type Intent, type PeerStore, type SessionRec } from './store.js';
import { withExtras } from './wire.js';

type Obj = { [key: string]: Json };

export type Caller = { kind: 'agent'; agent: AgentRec } | { kind: 'human' };

export interface Ctx {
  req: IncomingMessage;
  res: ServerResponse;
  params: string[];
  query: URLSearchParams;
  store: PeerStore;
  knobs: PeerKnobs;
  caller: Caller | null;
  /** Read the JSON request body (once), recording it in the request log. */
  body(): Promise<Obj | Refusal>;
  /** Note how a stream ended (first call wins). */
  streamEnded(how: string): void;
  /** Called with a cleanup for anything that outlives the handler (an open stream). */
  hold(cleanup: () => void): () => void;
}

/** A JSON answer, a refusal, or `streaming` when the handler owns the response. */
export type Reply = { status: number; body: Obj; headers?: { [name: string]: string } } | Refusal | 'streaming';

export interface Route {
  method: string;
  /** Path segments; `:x` matches one (decoded) segment. `stream` is matched against knobs.streamPath. */
  path: string[] | 'stream';
  name: string;
  auth: 'none' | 'agent' | 'human' | 'any';
  handle(c: Ctx): Promise<Reply> | Reply;
}

const ok = (body: Obj, status = 200): Reply => ({ status, body });
const agentOf = (c: Ctx): AgentRec => (c.caller as { kind: 'agent'; agent: AgentRec }).agent;

/** Wait until `ready()` or `ms` pass, re-checking at least every 250 ms and on every store change (§4 `wait`). */
function hold(c: Ctx, ms: number, ready: () => boolean): Promise<void> {
  if (ms <= 0 || ready()) return Promise.resolve();
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      clearInterval(tick);
      off();
      c.res.off('close', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    const tick = setInterval(() => {
      c.store.sweep();
      if (ready()) done();
    }, 250);
    const off = c.store.onChange(() => {
      if (ready()) done();
    });
    c.res.on('close', done);
  });
}

function capability(c: Ctx): Reply {
  const k = c.knobs;
  const inbound: Obj = {
    max_wait_seconds: k.maxWaitSeconds,
    stream_max_hold_seconds: k.streamMaxHoldSeconds,
    keepalive_seconds: k.keepaliveSeconds,
  };
  if (k.sessionParam !== null) inbound.session_param = k.sessionParam;
  if (k.streamPath !== null) inbound.stream_url = k.streamPath;
  const doc: Obj = {
    account: withExtras(k.agentDirectory ? { agent_directory: '/v1/account/agents' } : {}, k.json, 'account'),
    session: {
      max_live_per_agent: k.maxLivePerAgent,
      lease_max_seconds: k.leaseMaxSeconds,
      lease_min_seconds: k.leaseMinSeconds,
      lease_default_seconds: k.leaseDefaultSeconds,
    },
    signature_algs: ['hmac-sha256'],
    inbound: withExtras(inbound, k.json, 'inbound'),
    server_time: iso(c.store.now()),
    hub: { version: '3.0.0-peer', name: 'peer hub, written from MA2H.md alone' },
    version: k.version,
    protocol: k.protocol,
  };
  if (k.replayWindowSeconds !== null) doc.replay_window_seconds = k.replayWindowSeconds;
  return ok(doc);
}

function whoami(c: Ctx): Reply {
  if (c.caller?.kind === 'agent') {
    const a = c.caller.agent;
    return ok({ kind: 'agent', agent: withExtras({ id: a.id, label: a.label, account_id: c.store.accountId }, c.knobs.json, 'agent') });
  }
  return ok({ kind: 'human', account: { id: c.store.accountId, label: c.store.accountLabel } });
}

async function createSession(c: Ctx): Promise<Reply> {
  const b = await c.body();
  if (b instanceof Refusal) return b;
  const f = readFields(b, {
    client_key: fields.string,
    name: fields.optString,
    lease_seconds: fields.optNumber,
    home: fields.optString,
    host: fields.optString,
    pid: fields.optInteger,
  });
  if (f instanceof Refusal) return f;
  const out = c.store.register(agentOf(c), {
    clientKey: f.client_key,
    name: f.name,
    leaseSeconds: f.lease_seconds,
    home: f.home,
    host: f.host,
    pid: f.pid,
  });
  if (out instanceof Refusal) return out;
  return ok({ session: c.store.sessionView(out.session) }, out.status);
}

function getSession(c: Ctx): Reply {
  const s = c.store.lookup(agentOf(c), c.params[0]!);
  return s instanceof Refusal ? s : ok({ session: c.store.sessionView(s) });
}

function closeSession(c: Ctx): Reply {
  const s = c.store.lookup(agentOf(c), c.params[0]!);
  if (s instanceof Refusal) return s;
  c.store.close(s, 'closed');
  return ok({ session: c.store.sessionView(s) });
}

function operatorClose(c: Ctx): Reply {
  const s = c.store.sessions.get(c.params[0]!);
  if (s === undefined) return new Refusal(404, 'session_not_found', `no session ${c.params[0]}`);
  c.store.close(s, 'closed_by_operator');
  return ok({ session: c.store.sessionView(s) });
}

async function lift(c: Ctx): Promise<Reply> {
  const b = await c.body();
  if (b instanceof Refusal) return b;
  const f = readFields(b, { agent_id: fields.string, client_key: fields.optString, name: fields.optString });
  if (f instanceof Refusal) return f;
  return ok({ lifted: c.store.lift(f.agent_id, f.client_key, f.name) });
}

function limitOf(c: Ctx, fallback: number): number | Refusal {
  const n = queryNumber(c.query, 'limit', fallback, 1, 1000);
  return n instanceof Refusal ? n : Math.floor(n);
}

async function drain(c: Ctx): Promise<Reply> {
  const agent = agentOf(c);
  const consumer = parseConsumer(header(c.req, 'ma2h-consumer'));
  if (consumer instanceof Refusal) return consumer;
  const limit = limitOf(c, 100);
  if (limit instanceof Refusal) return limit;
  const sessionId = c.query.get('session');
  if (sessionId !== null) {
    if (!c.store.agentMessaging) return messagingDisabled();
    const s = c.store.present(agent, sessionId, { drain: true, consumer });
    if (s instanceof Refusal) return s;
    const pending = c.store.pendingFor(s, limit);
    return ok({ messages: pending.map((e) => c.store.delivery(e)), session: c.store.leaseView(s) });
  }
  const wait = queryNumber(c.query, 'wait', 0, 0, c.knobs.maxWaitSeconds);
  if (wait instanceof Refusal) return wait;
  c.store.touchPrincipal(agent);
  await hold(c, wait * 1000, () => c.store.principalPending(agent, 1).length > 0);
  c.store.touchPrincipal(agent);
  return ok({ messages: c.store.principalPending(agent, limit).map((e) => c.store.delivery(e)) });
}

/** §12 Hold = min(stream_max_hold, lease − min(1 s, lease/4)). */
const holdMs = (knobs: PeerKnobs, s: SessionRec): number =>
  Math.max(1, Math.floor(Math.min(knobs.streamMaxHoldSeconds * 1000, s.leaseSeconds * 1000 - Math.min(1000, (s.leaseSeconds * 1000) / 4))));

function stream(c: Ctx): Reply {
  const accept = header(c.req, 'accept') ?? '';
  if (!/text\/event-stream|\*\/\*/.test(accept)) return new Refusal(406, 'not_acceptable', 'the stream answers Accept: text/event-stream');
  const sessionId = c.query.get('session');
  if (sessionId === null) return new Refusal(400, 'invalid_request', 'the stream needs ?session=<id>');
  const consumer = parseConsumer(header(c.req, 'ma2h-consumer'));
  if (consumer instanceof Refusal) return consumer;
  if (!c.store.agentMessaging) return messagingDisabled();
  const s = c.store.present(agentOf(c), sessionId, { drain: true, consumer });
  if (s instanceof Refusal) return s;

  const { res, store, knobs } = c;
  res.socket?.setNoDelay(true);
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', date: new Date(store.now()).toUTCString() });
  res.flushHeaders();
  const writer = new SseWriter(
    res,
    () => knobs.sse,
    () => knobs.json,
  );
  let ended = false;
  const finish = (): void => {
    if (ended) return;
    ended = true;
    clearTimeout(boundTimer);
    clearInterval(keepalive);
    release();
    store.detach(s, held);
  };
  const held: HeldStream = {
    consumer,
    push: (deliveries) => void writer.event('entries', { messages: deliveries }),
    close: (reason) => {
      c.streamEnded(`closed:${reason}`);
      finish();
      void writer.event('closed', { reason });
      void writer.end();
    },
  };
  const ms = holdMs(knobs, s);
  const boundTimer = setTimeout(() => {
    c.streamEnded('hold_bound');
    finish();
    void writer.event('reconnect', { reason: 'hold_bound' });
    void writer.end();
  }, ms);
  const keepalive = setInterval(() => void writer.comment('keepalive'), knobs.keepaliveSeconds * 1000);
  const release = c.hold(() => {
    finish();
    res.destroy();
  });
  res.on('close', () => {
    c.streamEnded('client');
    finish();
  });

  store.attach(s, held);
  void writer.event(
    'open',
    withExtras(
      { session: s.id, expires_at: iso(s.expiresAt), lease_seconds: s.leaseSeconds, hold_ms: ms, stream_max_hold_seconds: knobs.streamMaxHoldSeconds },
      knobs.json,
      'open',
    ),
  );
  const pending = store.pendingFor(s);
  if (pending.length > 0) held.push(pending.map((e) => store.delivery(e)));
  return 'streaming';
}

async function ack(c: Ctx): Promise<Reply> {
  const b = await c.body();
  if (b instanceof Refusal) return b;
  const f = readFields(b, { session: fields.optString, delivered: fields.optIds, acknowledged: fields.optIds });
  if (f instanceof Refusal) return f;
  const agent = agentOf(c);
  let s: SessionRec | null = null;
  if (f.session !== null) {
    const p = c.store.present(agent, f.session, { drain: false, consumer: null, forAck: true });
    if (p instanceof Refusal) return p;
    s = p;
  }
  const counts = c.store.ack(agent, f.delivered, f.acknowledged);
  return ok({ ...counts, ...(s !== null ? { session: c.store.leaseView(s) } : {}) });
}

const INTENTS: readonly string[] = ['notify', 'ask', 'task'];
const isIntent = (v: string): v is Intent => INTENTS.includes(v);
const MAX_TEXT = 65_536;

function checkText(text: string): Refusal | null {
  const n = Buffer.byteLength(text, 'utf8');
  return n > MAX_TEXT ? new Refusal(400, 'text_too_long', `text is ${n} bytes; at most ${MAX_TEXT}`, { limit: MAX_TEXT, bytes: n }) : null;
}

/** The sender's session, presented (renewed) when the body names one. */
function senderSession(c: Ctx, id: string | null): SessionRec | null | Refusal {
  return id === null ? null : c.store.present(agentOf(c), id, { drain: false, consumer: null });
}

async function sendMessage(c: Ctx): Promise<Reply> {
  const b = await c.body();
  if (b instanceof Refusal) return b;
  const f = readFields(b, {
    to: fields.string,
    intent: fields.string,
    text: fields.string,
    session: fields.optString,
    in_reply_to: fields.optString,
    idempotency_key: fields.optString,
  });
  if (f instanceof Refusal) return f;
  if (!isIntent(f.intent)) return new Refusal(400, 'invalid_request', '"intent" must be notify, ask or task', { field: 'intent' });
  const tooLong = checkText(f.text);
  if (tooLong) return tooLong;
  const agent = agentOf(c);
  if (!c.store.agentMessaging) return messagingDisabled();
  const idem = f.idempotency_key === null ? null : { key: f.idempotency_key, body: canonicalJson(b) };
  if (idem !== null) {
    const prior = c.store.idempotent(agent, idem.key, idem.body);
    if (prior instanceof Refusal) return prior;
    if (prior !== null) return ok({ idempotent_replay: true, message: c.store.messageView(prior.message) });
  }
  const s = senderSession(c, f.session);
  if (s instanceof Refusal) return s;
  const m = c.store.send(agent, s, { to: f.to, intent: f.intent, text: f.text, inReplyTo: f.in_reply_to, idempotency: idem });
  if (m instanceof Refusal) return m;
  return ok({ message: c.store.messageView(m), ...(s !== null ? { session: c.store.leaseView(s) } : {}) }, 202);
}

async function respond(c: Ctx): Promise<Reply> {
  const b = await c.body();
  if (b instanceof Refusal) return b;
  const f = readFields(b, { text: fields.string, session: fields.optString });
  if (f instanceof Refusal) return f;
  const tooLong = checkText(f.text);
  if (tooLong) return tooLong;
  if (!c.store.agentMessaging) return messagingDisabled();
  const s = senderSession(c, f.session);
  if (s instanceof Refusal) return s;
  const m = c.store.respond(agentOf(c), s, c.params[0]!, f.text);
  if (m instanceof Refusal) return m;
  return ok({ message: c.store.messageView(m), ...(s !== null ? { session: c.store.leaseView(s) } : {}) }, 201);
}

async function getMessage(c: Ctx): Promise<Reply> {
  const agent = agentOf(c);
  const m = c.store.visibleMessage(agent, c.params[0]!);
  if (m instanceof Refusal) return m;
  const wait = queryNumber(c.query, 'wait', 0, 0, c.knobs.maxWaitSeconds);
  if (wait instanceof Refusal) return wait;
  const state = m.state;
  const settled = (): boolean => m.response !== null || m.state !== state || ['acknowledged', 'bounced', 'expired'].includes(m.state);
  await hold(c, wait * 1000, settled);
  return ok({ message: c.store.messageView(m) });
}

function listMessages(c: Ctx): Reply {
  const direction = c.query.get('direction') ?? 'sent';
  if (direction !== 'sent' && direction !== 'received')
    return new Refusal(400, 'invalid_request', 'direction must be sent or received', { field: 'direction' });
  const limit = limitOf(c, 50);
  if (limit instanceof Refusal) return limit;
  const page = c.store.listMessages(agentOf(c), direction, limit, c.query.get('before'));
  if (page instanceof Refusal) return page;
  return ok({ next: page.next, messages: page.messages.map((m) => c.store.messageView(m)) });
}

async function directive(c: Ctx): Promise<Reply> {
  const b = await c.body();
  if (b instanceof Refusal) return b;
  const f = readFields(b, { to: fields.string, text: fields.string });
  if (f instanceof Refusal) return f;
  const tooLong = checkText(f.text);
  if (tooLong) return tooLong;
  const m = c.store.directive(f.to, f.text);
  return m instanceof Refusal ? m : ok({ message: c.store.messageView(m) }, 202);
}

async function patchAccount(c: Ctx): Promise<Reply> {
  const b = await c.body();
  if (b instanceof Refusal) return b;
  const on = fields.boolean(b, 'agent_messaging');
  if (on instanceof Refusal) return on;
  c.store.agentMessaging = on;
  return ok({ account: { id: c.store.accountId, label: c.store.accountLabel, agent_messaging: on } });
}

const agentRow = (a: AgentRec): Obj => ({ id: a.id, label: a.label, revoked: a.revoked, source: a.source });

function listAgents(c: Ctx): Reply {
  const withConfig = (c.query.get('include') ?? '').split(',').includes('config');
  const rows = [...c.store.agents.values()].filter((a) => a.source === 'account' || withConfig).map(agentRow);
  return ok({ agents: rows });
}

async function mintAgent(c: Ctx): Promise<Reply> {
  const b = await c.body();
  if (b instanceof Refusal) return b;
  const label = fields.string(b, 'label');
  if (label instanceof Refusal) return label;
  const { agent, token } = c.store.addAgent({ label });
  return ok({ token, agent: agentRow(agent) }, 201);
}

function revokeAgent(c: Ctx): Reply {
  const a = c.store.agents.get(c.params[0]!);
  if (a === undefined) return new Refusal(404, 'agent_not_found', `no agent ${c.params[0]}`);
  a.revoked = true;
  return ok({ agent: agentRow(a) });
}

function fleet(c: Ctx): Reply {
  return ok({ sessions: c.store.fleet() });
}

export function header(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v.join(', ') : v;
}

export const ROUTES: Route[] = [
  { method: 'GET', path: ['v1', 'capability'], name: 'capability', auth: 'none', handle: capability },
  { method: 'GET', path: ['v1', 'whoami'], name: 'whoami', auth: 'any', handle: whoami },
  { method: 'POST', path: ['v1', 'sessions'], name: 'sessions.create', auth: 'agent', handle: createSession },
  { method: 'GET', path: ['v1', 'sessions', ':id'], name: 'sessions.get', auth: 'agent', handle: getSession },
  { method: 'POST', path: ['v1', 'sessions', ':id', 'close'], name: 'sessions.close', auth: 'agent', handle: closeSession },
  { method: 'POST', path: ['v1', 'sessions', ':id', 'operator-close'], name: 'sessions.operator_close', auth: 'human', handle: operatorClose },
  { method: 'POST', path: ['v1', 'operator-stops', 'lift'], name: 'operator_stops.lift', auth: 'human', handle: lift },
  { method: 'GET', path: 'stream', name: 'inbox.stream', auth: 'agent', handle: stream },
  { method: 'GET', path: ['v1', 'inbox'], name: 'inbox.drain', auth: 'agent', handle: drain },
  { method: 'POST', path: ['v1', 'inbox', 'ack'], name: 'inbox.ack', auth: 'agent', handle: ack },
  { method: 'POST', path: ['v1', 'messages'], name: 'messages.send', auth: 'agent', handle: sendMessage },
  { method: 'GET', path: ['v1', 'messages'], name: 'messages.list', auth: 'agent', handle: listMessages },
  { method: 'GET', path: ['v1', 'messages', ':id'], name: 'messages.get', auth: 'agent', handle: getMessage },
  { method: 'POST', path: ['v1', 'messages', ':id', 'respond'], name: 'messages.respond', auth: 'agent', handle: respond },
  { method: 'POST', path: ['v1', 'directives'], name: 'directives', auth: 'human', handle: directive },
  { method: 'PATCH', path: ['v1', 'account'], name: 'account.patch', auth: 'human', handle: patchAccount },
  { method: 'GET', path: ['v1', 'account', 'agents'], name: 'account.agents', auth: 'any', handle: listAgents },
  { method: 'POST', path: ['v1', 'account', 'agents'], name: 'account.agents.mint', auth: 'human', handle: mintAgent },
  { method: 'POST', path: ['v1', 'account', 'agents', ':id', 'revoke'], name: 'account.agents.revoke', auth: 'human', handle: revokeAgent },
  { method: 'GET', path: ['v1', 'fleet'], name: 'fleet', auth: 'any', handle: fleet },
];
