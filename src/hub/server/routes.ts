import type { ConsumerIdentity } from '../contract/index.js';
import {
  CONSUMER_HEADER,
  parseConsumerHeader,
  validateAccountPatch,
  validateAck,
  validateCreateSession,
  validateDirective,
  validateLift,
  validateMintAgent,
  validateRespond,
  validateSend,
  validateId,
  type RequestCheck,
} from '../contract/index.js';
import { messagingEnabled, setMessaging } from './account.js';
import { agentView, directory, findAgent, mintAgent, revokeAgent } from './agents.js';
import { presentedHash, type Caller } from './auth.js';
import { effectiveMaxWaitSeconds, HUB_DEFAULTS } from './config.js';
import type { HubCore } from './core.js';
import type { Signer } from './delivery.js';
import { parseFaultRules } from './faults.js';
import { answer, bad, errorReply, fault, good, json, type Answer, type Reply } from './http.js';
import type { Sql } from './sql.js';
import { iso } from './ids.js';
import { ack, drain, hold, MESSAGING_OFF } from './inbox.js';
import { direct, listMessages, respond, send, visibleMessage, type Sent } from './messages.js';
import { sessionReachability } from './presence.js';
import type { Route, RouteContext } from './router.js';
import {
  closeSession,
  getSession,
  leaseView,
  liftStops,
  listOperatorStops,
  operatorClose,
  registerSession,
  sessionView,
  type SessionLeaseRow,
  type SessionRow,
} from './sessions.js';
import { openStream } from './stream.js';
import { isTerminal, messageById, messageJson } from './track.js';
import { hop, stamped, TRACE } from '../../util/trace.js';

const agentId = (caller: Caller | null): string => (caller as Extract<Caller, { kind: 'agent' }>).agentId;
const agentOf = (c: RouteContext): string => agentId(c.caller);

function bodyOf<T>(c: RouteContext, validate: (b: unknown) => RequestCheck<T>): Answer<T> {
  const raw = c.body.kind === 'json' ? c.body.value : undefined;
  if (raw === undefined) return bad(400, 'invalid_request', `${c.req.method} ${c.url.pathname} needs a JSON body`);
  const v = validate(raw);
  return v.ok ? good(v.value) : bad(400, v.code, v.reason);
}

function numberParam(c: RouteContext, name: string, dflt: number, min: number, max: number, integer: boolean): Answer<number> {
  const raw = c.url.searchParams.get(name);
  if (raw === null || raw === '') return good(dflt);
  const v = Number(raw);
  if (!Number.isFinite(v) || v < min || (integer && !Number.isInteger(v))) {
    return bad(400, 'invalid_request', `query parameter ${name}=${raw.slice(0, 40)} must be ${integer ? 'an integer' : 'a number'} ≥ ${min}`);
  }
  return good(Math.min(v, max));
}

function consumerOf(c: RouteContext): Answer<ConsumerIdentity | null> {
  const raw = c.req.headers[CONSUMER_HEADER.toLowerCase()];
  if (raw === undefined) return good(null);
  const parsed = parseConsumerHeader(Array.isArray(raw) ? raw.join(';') : raw);
  return parsed.ok ? good(parsed.value) : bad(400, 'invalid_request', parsed.reason);
}

function sessionParam(c: RouteContext): Answer<string | null> {
  const raw = c.url.searchParams.get('session');
  if (raw === null) return good(null);
  const v = validateId(raw, 'query parameter session');
  return v.ok ? good(v.value) : bad(400, 'invalid_request', v.reason);
}

/**
 * What a stream connect asks for, checked in order: Accept (406), the session (400), agent messaging
 * (403, when `messaging` is known: false is off), the MA2H-Consumer header (400).
 */
function streamShape(c: RouteContext, messaging: boolean | null): Answer<{ sessionId: string; consumer: ConsumerIdentity | null }> {
  const accept = c.req.headers.accept;
  if (accept !== undefined && !/text\/event-stream|text\/\*|\*\/\*/i.test(accept)) {
    return bad(406, 'not_acceptable', 'the stream answers only text/event-stream; send "Accept: text/event-stream"');
  }
  const session = sessionParam(c);
  if (!session.ok) return session;
  if (session.value === null) return bad(400, 'invalid_request', 'the stream needs ?session=<session id>; the principal mailbox is drained with GET /v1/inbox');
  if (messaging === false) return { ok: false, error: MESSAGING_OFF };
  const consumer = consumerOf(c);
  return consumer.ok ? good({ sessionId: session.value, consumer: consumer.value }) : consumer;
}

const withLease = (body: Record<string, unknown>, lease: SessionLeaseRow | null): Record<string, unknown> =>
  lease ? { ...body, session: leaseView(lease) } : body;

const sentBody = (s: Sent): Record<string, unknown> =>
  withLease({ message: messageJson(s.row, s.replay), ...(s.replay ? { idempotent_replay: true } : {}) }, s.lease);

/** Every MA2H endpoint (§1–§10), plus `GET /v1/account`, `GET /v1/operator-stops` and the test-only `/v1/_faults`. */
export function apiRoutes(core: HubCore, signer: Signer): Route[] {
  /** The switch as the request's credential statement read it (every route that asks is authenticated). */
  const messagingOn = async (c: RouteContext): Promise<boolean> => c.messaging ?? (await messagingEnabled(c.store.read));
  const maxWait = effectiveMaxWaitSeconds(core.config);
  const routes: Route[] = [
    {
      method: 'GET',
      path: '/v1/capability',
      needs: 'none',
      cls: 'capability',
      handle: () =>
        json(200, {
          protocol: 'MA2H',
          version: '0.5.0',
          hub: { name: 'oh-hai reference hub', version: core.config.version },
          server_time: iso(core.clock.now()),
          inbound: {
            session_param: true,
            stream_url: '/v1/inbox/stream',
            max_wait_seconds: maxWait,
            stream_max_hold_seconds: core.config.streamMaxHoldSeconds,
            keepalive_seconds: core.config.keepaliveSeconds,
          },
          signature_algs: ['hmac-sha256'],
          replay_window_seconds: core.config.replayWindowSeconds,
          session: {
            lease_default_seconds: core.config.leaseDefaultSeconds,
            lease_min_seconds: core.config.leaseMinSeconds,
            lease_max_seconds: core.config.leaseMaxSeconds,
            max_live_per_agent: HUB_DEFAULTS.maxLivePerAgent,
          },
          ...(core.config.agentDirectory === false ? {} : { account: { agent_directory: '/v1/account/agents' } }),
        }),
    },
    {
      method: 'GET',
      path: '/v1/whoami',
      needs: 'any',
      cls: 'other',
      handle: (c) => {
        const caller = c.caller!;
        if (caller.kind === 'human') return json(200, { kind: 'human', account: core.account });
        return json(200, { kind: 'agent', agent: { id: caller.agentId, label: caller.label, account_id: core.account.id } });
      },
    },
    {
      method: 'GET',
      path: '/v1/account',
      needs: 'any',
      cls: 'other',
      handle: async (c) => json(200, { account: { ...core.account, agent_messaging: await messagingOn(c) } }),
    },
    {
      method: 'PATCH',
      path: '/v1/account',
      needs: 'human',
      cls: 'other',
      handle: async (c) => {
        const patch = bodyOf(c, validateAccountPatch);
        if (!patch.ok) return errorReply(patch.error);
        await c.store.write((tx) => setMessaging(tx, patch.value.agent_messaging));
        return json(200, { account: { ...core.account, agent_messaging: patch.value.agent_messaging } });
      },
    },
    {
      method: 'POST',
      path: '/v1/sessions',
      needs: 'agent',
      cls: 'sessions',
      handle: async (c) => {
        if (!(await messagingOn(c))) return errorReply(MESSAGING_OFF);
        const req = bodyOf(c, validateCreateSession);
        if (!req.ok) return errorReply(req.error);
        const r = await c.store.write((tx) => registerSession(core, tx, agentOf(c), req.value));
        return r.ok ? json(r.value.status, { session: sessionView(r.value.row) }) : errorReply(r.error);
      },
    },
    {
      method: 'GET',
      path: '/v1/sessions/:id',
      needs: 'agent',
      cls: 'sessions',
      handle: async (c) => answer(await c.store.write((tx) => getSession(core, tx, agentOf(c), c.params[0]!)), 200, (r) => ({ session: sessionView(r) })),
    },
    {
      method: 'POST',
      path: '/v1/sessions/:id/close',
      needs: 'agent',
      cls: 'sessions',
      handle: async (c) => answer(await c.store.write((tx) => closeSession(core, tx, agentOf(c), c.params[0]!)), 200, (r) => ({ session: sessionView(r) })),
    },
    {
      method: 'POST',
      path: '/v1/sessions/:id/operator-close',
      needs: 'human',
      cls: 'sessions',
      handle: async (c) => answer(await c.store.write((tx) => operatorClose(core, tx, c.params[0]!)), 200, (r) => ({ session: sessionView(r) })),
    },
    {
      method: 'GET',
      path: '/v1/operator-stops',
      needs: 'human',
      cls: 'other',
      handle: async (c) => {
        const stops = await listOperatorStops(c.store.read);
        const labels = await labelsOf(
          core,
          c.store.read,
          stops.map((s) => s.agent_id),
        );
        return json(200, {
          stops: stops.map((s) => ({
            agent_id: s.agent_id,
            agent_label: labels.get(s.agent_id) ?? null,
            client_key: s.client_key,
            name: s.name,
            session_id: s.session_id,
            recorded_at: iso(s.created_at),
          })),
        });
      },
    },
    {
      method: 'POST',
      path: '/v1/operator-stops/lift',
      needs: 'human',
      cls: 'other',
      handle: async (c) => {
        const req = bodyOf(c, validateLift);
        if (!req.ok) return errorReply(req.error);
        if (!(await findAgent(core, c.store.read, req.value.agent_id))) return fault(404, 'agent_not_found', `no agent ${req.value.agent_id} in this account`);
        return json(200, { lifted: await c.store.write((tx) => liftStops(tx, req.value.agent_id, req.value.client_key, req.value.name)) });
      },
    },
    {
      method: 'GET',
      path: '/v1/inbox',
      needs: 'agent',
      cls: 'drain',
      handle: async (c) => {
        const session = sessionParam(c);
        if (!session.ok) return errorReply(session.error);
        if (session.value !== null && !(await messagingOn(c))) return errorReply(MESSAGING_OFF);
        const consumer = consumerOf(c);
        if (!consumer.ok) return errorReply(consumer.error);
        const limit = numberParam(c, 'limit', 100, 1, 1000, true);
        if (!limit.ok) return errorReply(limit.error);
        const wait = numberParam(c, 'wait', 0, 0, maxWait, false);
        if (!wait.ok) return errorReply(wait.error);
        const r = await drain(
          core,
          c.store,
          signer,
          agentOf(c),
          { session: session.value, limit: limit.value, waitSeconds: wait.value, consumer: consumer.value },
          c.signal,
        );
        return answer(r, 200, (d) => withLease({ messages: d.deliveries }, d.lease));
      },
    },
    {
      method: 'GET',
      path: '/v1/inbox/stream',
      needs: 'agent',
      cls: 'stream',
      // Every stream connects once per hold: the credential is read in the renewal's statement.
      ownCredential: true,
      handle: async (c) => {
        const drop = c.faults.drop;
        // A well-formed connect by a token with an agent row: the renewal statement lets it in.
        const formed = streamShape(c, null);
        const hash = presentedHash(c.req);
        if (formed.ok && hash !== null && !core.configAgents.has(hash)) {
          const admit = async (): Promise<Answer<string>> => {
            const who = await c.authenticate();
            if (!who.ok) return who;
            return who.value.messaging ? good(agentId(who.value.caller)) : { ok: false, error: MESSAGING_OFF };
          };
          return openStream(core, c.store, signer, c.res, { who: { tokenHash: hash, admit }, ...formed.value, drop });
        }
        // Anything else is let in first, then checked in the order every route answers in.
        const who = await c.authenticate();
        if (!who.ok) return errorReply(who.error);
        const checked = streamShape(c, who.value.messaging);
        if (!checked.ok) return errorReply(checked.error);
        return openStream(core, c.store, signer, c.res, { who: { agentId: agentId(who.value.caller) }, ...checked.value, drop });
      },
    },
    {
      method: 'POST',
      path: '/v1/inbox/ack',
      needs: 'agent',
      cls: 'ack',
      handle: async (c) => {
        const req = bodyOf(c, validateAck);
        if (!req.ok) return errorReply(req.error);
        const r = await c.store.write((tx) => ack(core, tx, agentOf(c), req.value));
        return answer(r, 200, (a) => withLease({ delivered: a.delivered, acknowledged: a.acknowledged, unknown: a.unknown }, a.lease));
      },
    },
    {
      method: 'POST',
      path: '/v1/messages',
      needs: 'agent',
      cls: 'messages',
      handle: async (c) => {
        const received = TRACE ? process.hrtime.bigint() : 0n;
        if (!(await messagingOn(c))) return errorReply(MESSAGING_OFF);
        const req = bodyOf(c, validateSend);
        if (!req.ok) return errorReply(req.error);
        const r = await send(core, c.store, agentOf(c), req.value);
        if (r.ok && !r.value.replay) core.metrics.sent();
        if (TRACE && r.ok) {
          hop('hub.received', r.value.row.id, received);
          hop('hub.committed', r.value.row.id, stamped('hub.commit'));
          const at = c.work.at;
          if (at?.arrived !== undefined) hop('hub.arrived', r.value.row.id, at.arrived);
          if (at?.laned !== undefined) hop('hub.laned', r.value.row.id, at.laned);
          if (at?.done !== undefined) hop('hub.done', r.value.row.id, at.done);
        }
        return r.ok ? json(r.value.replay ? 200 : 202, sentBody(r.value)) : errorReply(r.error);
      },
    },
    {
      method: 'GET',
      path: '/v1/messages',
      needs: 'any',
      cls: 'messages',
      handle: async (c) => {
        const direction = c.url.searchParams.get('direction') ?? 'sent';
        if (direction !== 'sent' && direction !== 'received')
          return fault(400, 'invalid_request', `direction=${direction.slice(0, 40)} must be sent or received`);
        const limit = numberParam(c, 'limit', 50, 1, 500, true);
        if (!limit.ok) return errorReply(limit.error);
        const page = await listMessages(c.store.read, c.caller!, direction, limit.value, c.url.searchParams.get('before'));
        return answer(page, 200, (p) => ({ messages: p.rows.map((m) => messageJson(m)), next: p.next }));
      },
    },
    {
      method: 'GET',
      path: '/v1/messages/:id',
      needs: 'any',
      cls: 'messages',
      handle: async (c) => {
        const id = c.params[0]!;
        const first = await visibleMessage(c.store.read, c.caller!, id);
        if (!first.ok) return errorReply(first.error);
        const wait = numberParam(c, 'wait', 0, 0, maxWait, false);
        if (!wait.ok) return errorReply(wait.error);
        const start = first.value;
        if (wait.value > 0 && !isTerminal(start.state) && start.response_id === null) {
          await hold(core, 'message', id, core.clock.monotonic() + wait.value * 1000, c.signal, async () => {
            const now = (await messageById(c.store.read, id))!;
            return now.state !== start.state || now.response_id !== null;
          });
        }
        return json(200, { message: messageJson((await messageById(c.store.read, id))!) });
      },
    },
    {
      method: 'POST',
      path: '/v1/messages/:id/respond',
      needs: 'agent',
      cls: 'messages',
      handle: async (c) => {
        if (!(await messagingOn(c))) return errorReply(MESSAGING_OFF);
        const req = bodyOf(c, validateRespond);
        if (!req.ok) return errorReply(req.error);
        const r = await respond(core, c.store, agentOf(c), c.params[0]!, req.value);
        return answer(r, 201, sentBody);
      },
    },
    {
      method: 'POST',
      path: '/v1/directives',
      needs: 'human',
      cls: 'messages',
      handle: async (c) => {
        const req = bodyOf(c, validateDirective);
        if (!req.ok) return errorReply(req.error);
        const sent = await direct(core, c.store, req.value);
        if (sent.ok) core.metrics.sent();
        return answer(sent, 202, (m) => ({ message: messageJson(m) }));
      },
    },
    {
      method: 'GET',
      path: '/v1/account/agents',
      needs: 'any',
      cls: 'other',
      handle: async (c) =>
        core.config.agentDirectory === false && c.caller!.kind === 'agent'
          ? fault(403, 'forbidden', 'this Hub advertises no account agent directory; only the human token may list the account agents')
          : json(200, { agents: await directory(core, c.store.read, c.url.searchParams.get('include') === 'config') }),
    },
    {
      method: 'POST',
      path: '/v1/account/agents',
      needs: 'human',
      cls: 'other',
      handle: async (c) => {
        const req = bodyOf(c, validateMintAgent);
        if (!req.ok) return errorReply(req.error);
        const minted = await c.store.write((tx) => mintAgent(tx, req.value.label));
        return json(201, { agent: agentView(minted.agent), token: minted.token });
      },
    },
    {
      method: 'POST',
      path: '/v1/account/agents/:id/revoke',
      needs: 'human',
      cls: 'other',
      handle: async (c) => answer(await c.store.write((tx) => revokeAgent(core, tx, c.params[0]!)), 200, (a) => ({ agent: agentView(a) })),
    },
    {
      method: 'GET',
      path: '/v1/fleet',
      needs: 'any',
      cls: 'other',
      handle: async (c) => json(200, { sessions: await fleet(core, c.store.read) }),
    },
  ];
  if (core.config.faultInjection) {
    routes.push({
      method: 'POST',
      path: '/v1/_faults',
      needs: 'human',
      cls: 'other',
      handle: (c) => {
        const rules = parseFaultRules(c.body.kind === 'json' ? c.body.value : undefined);
        if (!rules.ok) return fault(400, 'invalid_request', rules.reason);
        core.faults.set(rules.value);
        return json(200, { rules: rules.value });
      },
    });
  }
  return routes;
}

/** `GET /v1/fleet` (§10): every live session in the account with its reachability. */
async function fleet(core: HubCore, read: Sql): Promise<Record<string, unknown>[]> {
  const now = core.clock.now();
  const rows = await read.all<SessionRow>(`SELECT * FROM sessions WHERE state = 'active' AND expires_at > ? ORDER BY created_at, id`, now);
  const labels = await labelsOf(
    core,
    read,
    rows.map((r) => r.agent_id),
  );
  return rows.map((r) => ({
    address: sessionView(r).address,
    agent_id: r.agent_id,
    agent_label: labels.get(r.agent_id) ?? null,
    session_id: r.id,
    name: r.name,
    state: r.state,
    reachability: sessionReachability(core, r, now),
    expires_at: iso(r.expires_at),
    last_renewed_at: iso(r.last_renewed_at),
    holder: r.holder_host !== null && r.holder_pid !== null ? { host: r.holder_host, pid: r.holder_pid } : null,
  }));
}

/** The labels of these agents (null for config identities), one look-up each. */
async function labelsOf(core: HubCore, read: Sql, ids: string[]): Promise<Map<string, string | null>> {
  const out = new Map<string, string | null>();
  for (const id of new Set(ids)) out.set(id, (await findAgent(core, read, id))?.label ?? null);
  return out;
}
