import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HubClient, type HubResult } from '../../../src/hub/client/index.js';
import {
  chooseTransport,
  parseSignature,
  replayWindowSeconds,
  splitDelivery,
  validateEntry,
  verifyMac,
  type Capability,
  type Entry,
} from '../../../src/hub/contract/index.js';
import { startHub, type TestHub } from '../../helpers/hub.js';

/*
 * The client against the real reference Hub process on loopback: every endpoint it
 * calls, the stream's rhythm (hold bound, push, operator close), and the error codes
 * the consumer branches on. Deliveries are checked with the contract's own validator
 * and, since a test knows the Hub's key, with the MAC.
 */

let hub: TestHub;
let cap: Capability;
const clients: HubClient[] = [];
const agents: Record<'a' | 'b', { id: string; token: string }> = {} as never;

function client(token: string | null, consumer?: { home: string; host: string; pid: number }): HubClient {
  const c = new HubClient({ baseUrl: hub.url, token, consumer: consumer ?? null });
  clients.push(c);
  return c;
}

function value<T>(r: HubResult<T>): T {
  if (!r.ok) throw new Error(`expected success, got ${JSON.stringify(r.failure)}`);
  return r.value;
}

function failure<T>(r: HubResult<T>) {
  if (r.ok) throw new Error(`expected a failure, got ${r.status} ${JSON.stringify(r.value)}`);
  return r.failure;
}

/** Check a delivery as the consumer would (shape + signature syntax) and as only a key holder can (MAC). */
function verified(delivery: unknown): Entry {
  const d = splitDelivery(delivery);
  if (!d.ok) throw new Error(d.reason);
  const sig = parseSignature(d.value.signature, cap.signature_algs);
  if (!sig.ok) throw new Error(sig.reason);
  const entry = validateEntry(d.value.entry);
  if (!entry.ok) throw new Error(entry.reason);
  expect(verifyMac(hub.signingKey, d.value.signature, d.value.entry)).toBe(true);
  return entry.value;
}

beforeAll(async () => {
  hub = await startHub({
    args: ['--stream-max-hold-seconds', '1.5', '--keepalive-seconds', '0.2', '--lease-min-seconds', '2', '--holder-stale-seconds', '60'],
  });
  agents.a = await hub.mintAgent('alpha');
  agents.b = await hub.mintAgent('beta');
  cap = value(await client(null).capability());
});

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await hub?.dispose();
});

describe('HubClient against the reference Hub', () => {
  it('reads the capability: MA2H ≥ 0.5 with session_param, SSE advertised, fractional hold', () => {
    expect(cap.protocol).toBe('MA2H');
    expect(cap.inbound.stream_max_hold_seconds).toBe(1.5);
    expect(chooseTransport(cap, 'auto')).toBe('sse');
    expect(replayWindowSeconds(cap)).toBe(cap.replay_window_seconds ?? 300);
  });

  it('whoami for an agent and for the human', async () => {
    expect(value(await client(agents.a.token).whoami())).toMatchObject({ kind: 'agent', agent: { id: agents.a.id, label: 'alpha' } });
    expect(value(await client(hub.humanToken).whoami())).toMatchObject({ kind: 'human' });
  });

  it('a bad credential is 401 unauthorized; an unknown session is 404 session_not_found', async () => {
    expect(failure(await client('not-a-token').whoami())).toMatchObject({ kind: 'http', status: 401, code: 'unauthorized' });
    expect(failure(await client(agents.a.token).getSession('sess_doesnotexist'))).toMatchObject({ kind: 'http', status: 404, code: 'session_not_found' });
  });

  it('registers, adopts by name from the same home, and refuses another home while the holder is fresh', async () => {
    const home1 = client(agents.a.token, { home: 'home-one', host: 'box', pid: 101 });
    const created = await home1.createSession({ client_key: 'key-1', name: 'adopt-me', home: 'home-one', host: 'box', pid: 101 });
    expect(created.ok && created.status).toBe(201);
    const s = value(created);
    expect(s).toMatchObject({ state: 'active', name: 'adopt-me', address: `agent:${agents.a.id}#${s.id}` });
    const adopted = await home1.createSession({ client_key: 'key-1', name: 'adopt-me', home: 'home-one', host: 'box', pid: 101 });
    expect(adopted.ok && [adopted.status, adopted.value.id]).toEqual([200, s.id]);
    // The drain with MA2H-Consumer makes home-one the holder; home-two is then refused, naming it.
    expect(value(await home1.drain({ session: s.id })).session?.id).toBe(s.id);
    const home2 = client(agents.a.token, { home: 'home-two', host: 'other', pid: 202 });
    const held = failure(await home2.drain({ session: s.id }));
    expect(held).toMatchObject({ kind: 'http', status: 409, code: 'session_held' });
    expect(held.kind === 'http' && held.details.holder).toMatchObject({ home: 'home-one', host: 'box', pid: 101 });
    expect(value(await home1.closeSession(s.id)).state).toBe('closed');
  });

  it('send → drain → ack walks the delivery track; the drained entry verifies', async () => {
    const a = client(agents.a.token, { home: 'track-home', host: 'box', pid: 1 });
    const b = client(agents.b.token);
    const s = value(await a.createSession({ client_key: 'key-track', name: 'track' }));
    const sent = value(await b.send({ to: s.address, intent: 'notify', text: 'hello \u2028 café 😀' }));
    expect(sent.message).toMatchObject({ state: 'queued', intent: 'notify', destination: { address: s.address } });
    const drained = value(await a.drain({ session: s.id }));
    expect(drained.session).toMatchObject({ id: s.id });
    expect(drained.messages).toHaveLength(1);
    const entry = verified(drained.messages[0]);
    expect(entry).toMatchObject({ kind: 'message', to: s.address, text: 'hello \u2028 café 😀', message_id: sent.message.id });
    const acked = value(await a.ack({ session: s.id, delivered: [entry.id], acknowledged: [entry.id] }));
    expect(acked).toMatchObject({ acknowledged: 1, unknown: [] });
    const track = value(await b.getMessage(sent.message.id, { wait: 1 }));
    expect(track.state).toBe('acknowledged');
    expect(track.track.map((t) => t.state)).toEqual(['queued', 'delivered', 'acknowledged']);
    expect(value(await a.drain({ session: s.id })).messages).toEqual([]);
    const listed = value(await b.listMessages({ direction: 'sent' }));
    expect(listed.messages.map((m) => m.id)).toContain(sent.message.id);
  });

  it('an idempotency key replays the same message; a different body under it conflicts', async () => {
    const b = client(agents.b.token);
    const body = { to: `agent:${agents.a.id}`, intent: 'notify' as const, text: 'once', idempotency_key: 'idem-1' };
    const first = value(await b.send(body));
    const again = await b.send(body);
    expect(again.ok && [again.status, again.value.message.id, again.value.message.idempotent_replay]).toEqual([200, first.message.id, true]);
    expect(failure(await b.send({ ...body, text: 'twice' }))).toMatchObject({ kind: 'http', status: 409, code: 'idempotency_conflict' });
  });

  it('ask → respond: the asker sees the response on the message', async () => {
    const a = client(agents.a.token);
    const b = client(agents.b.token);
    const ask = value(await b.send({ to: `agent:${agents.a.id}`, intent: 'ask', text: 'ready?' }));
    const answered = await a.respond(ask.message.id, { text: 'yes' });
    expect(answered.ok && answered.status).toBe(201);
    const seen = value(await b.getMessage(ask.message.id, { wait: 1 }));
    expect(seen.response).toMatchObject({ text: 'yes' });
  });

  it('the stream pushes mail, then ends each hold with hold_bound; an operator close ends it with closed', async () => {
    const a = client(agents.a.token, { home: 'stream-home', host: 'box', pid: 2 });
    const b = client(agents.b.token);
    const human = client(hub.humanToken);
    const s = value(await a.createSession({ client_key: 'key-stream', name: 'streamer' }));

    // An empty hold ends at the bound, not by error.
    const opened: string[] = [];
    const quiet = await a.openStream(s.id, { capability: cap, onOpen: (e) => void opened.push(e.session) });
    expect(quiet).toEqual({ kind: 'hold_bound' });
    expect(opened).toEqual([s.id]);

    // Mail sent while nobody is connected is in the first entries event of the next connect.
    const sent = value(await b.send({ to: s.address, intent: 'task', text: 'do it' }));
    const pushed: Entry[] = [];
    const end = await a.openStream(s.id, { capability: cap, onEntries: (e) => void pushed.push(...e.messages.map(verified)) });
    expect(end).toEqual({ kind: 'hold_bound' });
    // Earlier tests left principal-addressed mail for agent a unacknowledged; this session claims
    // it too (first-claim-wins), so look for the task among what was pushed — exactly once.
    const task = pushed.filter((e) => e.kind === 'message' && e.message_id === sent.message.id);
    expect(task).toHaveLength(1);
    expect(task[0]).toMatchObject({ kind: 'message', intent: 'task', to: s.address });
    expect(new Set(pushed.map((e) => e.id)).size).toBe(pushed.length);

    // An operator close while held arrives as `closed` (the Hub writes it before answering the
    // close, and the hold outlasts that call); re-registering is refused until lifted.
    const closed = await a.openStream(s.id, {
      capability: cap,
      onOpen: async () => {
        value(await human.operatorClose(s.id));
      },
    });
    expect(closed).toEqual({ kind: 'closed', reason: 'closed_by_operator' });
    const refused = failure(await a.createSession({ client_key: 'key-stream', name: 'streamer' }));
    expect(refused).toMatchObject({ kind: 'http', status: 403, code: 'session_closed_by_operator' });
    value(await human.liftStop({ agent_id: agents.a.id, client_key: 'key-stream', name: 'streamer' }));
    expect(value(await a.createSession({ client_key: 'key-stream', name: 'streamer' })).state).toBe('active');
  });

  it('fleet and the agent directory', async () => {
    const a = client(agents.a.token);
    const s = value(await a.createSession({ client_key: 'key-fleet', name: 'fleet-row' }));
    const rows = value(await client(hub.humanToken).fleet());
    expect(rows.find((r) => r.session_id === s.id)).toMatchObject({ agent_id: agents.a.id, address: s.address, state: 'active' });
    const dir = value(await a.listAgents({ includeConfig: true, path: cap.account?.agent_directory ?? undefined }));
    expect(dir).toEqual(expect.arrayContaining([{ id: agents.a.id, label: 'alpha', revoked: false, source: 'account' }]));
  });

  it('messaging switched off refuses sends with messaging_disabled; on again, they work', async () => {
    const human = client(hub.humanToken);
    const b = client(agents.b.token);
    try {
      value(await human.patchAccount({ agent_messaging: false }));
      expect(failure(await b.send({ to: `agent:${agents.a.id}`, intent: 'notify', text: 'x' }))).toMatchObject({
        kind: 'http',
        status: 403,
        code: 'messaging_disabled',
      });
    } finally {
      value(await human.patchAccount({ agent_messaging: true }));
    }
    expect(value(await b.send({ to: `agent:${agents.a.id}`, intent: 'notify', text: 'x' })).message.state).toBe('queued');
  });

  it('a directive reaches the principal drain; a revoked agent gets 401', async () => {
    const human = client(hub.humanToken);
    const minted = value(await human.mintAgent({ label: 'short-lived' }));
    const own = client(minted.token);
    value(await human.directive({ to: `agent:${minted.agent.id}`, text: 'stand by' }));
    const drained = value(await own.drain({ wait: 1 }));
    expect(drained.messages.map(verified)).toEqual([expect.objectContaining({ kind: 'directive', text: 'stand by', to: `agent:${minted.agent.id}` })]);
    value(await human.revokeAgent(minted.agent.id));
    expect(failure(await own.whoami())).toMatchObject({ kind: 'http', status: 401, code: 'unauthorized' });
  });
});
