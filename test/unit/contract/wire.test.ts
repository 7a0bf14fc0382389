import { describe, expect, it } from 'vitest';
import {
  parseAckResult,
  parseAgents,
  parseClosedEvent,
  parseDrain,
  parseFleet,
  parseHubError,
  parseMessage,
  parseMessageList,
  parseMintedAgent,
  parseOpenEvent,
  parseReconnectEvent,
  parseSentMessage,
  parseSession,
  parseSessionLease,
  parseWhoami,
  validateAccountPatch,
  validateAck,
  validateCreateSession,
  validateDirective,
  validateLift,
  validateMintAgent,
  validateRespond,
  validateSend,
} from '../../../src/hub/contract/index.js';

const at = '2026-09-18T14:33:07.000Z';
const session = {
  id: 'sess_1',
  agent_id: 'agt_1',
  address: 'agent:agt_1#sess_1',
  name: 'builder-1',
  state: 'active',
  lease_seconds: 900,
  expires_at: at,
  last_renewed_at: at,
  created_at: at,
  closed_at: null,
  holder: { home: 'h', host: 'box', pid: 12, since: at, last_seen_at: at },
};
const message = {
  id: 'msg_1',
  from: 'agent:agt_1#sess_1',
  to: 'agent:agt_2',
  intent: 'ask',
  text: 'hi',
  created_at: at,
  state: 'queued',
  track: [{ state: 'queued', at }],
  destination: { address: 'agent:agt_2', snapshot: 'unknown' },
};

const failing = (r: { ok: boolean; reason?: string }): string => {
  expect(r.ok).toBe(false);
  return r.reason ?? '';
};

describe('response parsers', () => {
  it('parse a full session, ignoring unknown fields', () => {
    const r = parseSession({ session: { ...session, future: 1 }, extra: true });
    expect(r).toEqual({ ok: true, value: session });
  });
  it('normalise absent nullable session fields to null', () => {
    const { name: _n, closed_at: _c, holder: _h, ...bare } = session;
    const r = parseSession({ session: bare });
    expect(r.ok && [r.value.name, r.value.closed_at, r.value.holder]).toEqual([null, null, null]);
  });
  it.each([
    [{ session: { ...session, state: 'paused' } }, "field 'session' field 'state' is \"paused\"; expected one of active, lapsed, closed, closed_by_operator"],
    [{ session: { ...session, expires_at: 'soon' } }, "field 'expires_at' must be an ISO-8601 instant"],
    [{ session: { ...session, lease_seconds: '900' } }, "field 'lease_seconds' must be a number"],
    [{ session: { ...session, id: undefined } }, "is missing required field 'id'"],
    [{}, "field 'session' must be a JSON object, got undefined"],
  ])('session %# fails naming the field', (body, fragment) => {
    expect(failing(parseSession(body))).toContain(fragment);
  });
  it('lease, message, sent message and list', () => {
    expect(parseSessionLease({ session: { id: 'sess_1', expires_at: at, lease_seconds: 0.5 } })).toEqual({
      ok: true,
      value: { id: 'sess_1', expires_at: at, lease_seconds: 0.5 },
    });
    const m = parseMessage({ message });
    expect(m.ok && m.value).toMatchObject({ id: 'msg_1', prior: null, response: null, idempotent_replay: false });
    const replay = parseSentMessage({ message, idempotent_replay: true, session: { id: 'sess_1', expires_at: at, lease_seconds: 900 } });
    expect(replay.ok && [replay.value.message.idempotent_replay, replay.value.session?.id]).toEqual([true, 'sess_1']);
    const inner = parseSentMessage({ message: { ...message, idempotent_replay: true } });
    expect(inner.ok && [inner.value.message.idempotent_replay, inner.value.session]).toEqual([true, null]);
    const list = parseMessageList({ messages: [message, { ...message, id: 'msg_2', intent: 'directive' }], next: null });
    expect(list.ok && list.value.messages.map((x) => x.id)).toEqual(['msg_1', 'msg_2']);
    expect(failing(parseMessage({ message: { ...message, track: [{ state: 'lost', at }] } }))).toContain('track[0]');
  });
  it('fleet, agents, whoami, mint', () => {
    const row = {
      address: 'agent:agt_1#sess_1',
      agent_id: 'agt_1',
      agent_label: 'builder',
      session_id: 'sess_1',
      name: null,
      state: 'active',
      reachability: 'online',
      expires_at: at,
      last_renewed_at: at,
      holder: { host: 'box', pid: 3 },
    };
    expect(parseFleet({ sessions: [row] })).toEqual({ ok: true, value: [row] });
    expect(failing(parseFleet({ sessions: [{ ...row, reachability: 'maybe' }] }))).toContain("sessions[0] field 'reachability'");
    expect(parseAgents({ agents: [{ id: 'agt_1', label: 'b', revoked: false, source: 'config', extra: 1 }] })).toEqual({
      ok: true,
      value: [{ id: 'agt_1', label: 'b', revoked: false, source: 'config' }],
    });
    expect(failing(parseAgents({ agents: [{ id: 'agt_1', label: 'b', source: 'account' }] }))).toContain("agents[0] is missing required field 'revoked'");
    expect(parseWhoami({ kind: 'agent', agent: { id: 'agt_1', label: 'b', account_id: 'acct_1' } }).ok).toBe(true);
    expect(parseWhoami({ kind: 'human', account: { id: 'acct_1', label: 'me' } }).ok).toBe(true);
    expect(failing(parseWhoami({ kind: 'robot' }))).toContain('field \'kind\' is "robot"');
    expect(parseMintedAgent({ agent: { id: 'agt_9', label: 'new' }, token: 'tok' })).toEqual({
      ok: true,
      value: { agent: { id: 'agt_9', label: 'new' }, token: 'tok' },
    });
    expect(failing(parseMintedAgent({ agent: { id: 'agt_9' }, token: '' }))).toContain("'token' is empty");
  });
  it.each([
    ['whoami', () => parseWhoami({ kind: 'agent', agent: { id: 'agt_1#sess_2', label: 'b', account_id: 'acct_1' } })],
    ['whoami (account)', () => parseWhoami({ kind: 'agent', agent: { id: 'agt_1', label: 'b', account_id: 'acct 1' } })],
    ['a minted agent', () => parseMintedAgent({ agent: { id: 'agt 9', label: 'new' }, token: 'tok' })],
  ])('refuses an agent or account id outside the id grammar in %s, naming the field', (_what, parse) => {
    expect(failing(parse())).toMatch(/field '(id|agent_id|account_id)'.*(contains|bytes; the limit is 512)/);
  });
  it('keeps directory rows outside the id grammar for their readers to drop one by one', () => {
    expect(parseAgents({ agents: [{ id: 'cfg#hash', label: null, revoked: false, source: 'config' }] })).toMatchObject({ ok: true });
  });
  it('drain and ack keep what the consumer needs', () => {
    const d = parseDrain({ session: { id: 'sess_1', expires_at: at, lease_seconds: 900 }, messages: [{ anything: 1 }, 'junk'] });
    expect(d.ok && d.value.messages).toEqual([{ anything: 1 }, 'junk']);
    expect(parseDrain({ messages: [] })).toEqual({ ok: true, value: { session: null, messages: [] } });
    expect(failing(parseDrain({ messages: {} }))).toContain("field 'messages' must be an array");
    expect(parseAckResult({ delivered: 1, acknowledged: 0, unknown: ['ent_x'] })).toEqual({
      ok: true,
      value: { delivered: 1, acknowledged: 0, unknown: ['ent_x'], session: null },
    });
    expect(failing(parseAckResult({ delivered: 1, acknowledged: 0, unknown: [3] }))).toContain("'unknown' must be an array of entry ids");
  });
  it('stream events', () => {
    expect(parseOpenEvent({ session: 'sess_1', expires_at: at, lease_seconds: 900, hold_ms: 500, stream_max_hold_seconds: 0.5 })).toEqual({
      ok: true,
      value: { session: 'sess_1', expires_at: at, lease_seconds: 900, hold_ms: 500, stream_max_hold_seconds: 0.5 },
    });
    expect(failing(parseOpenEvent({ session: 'sess_1', expires_at: at, lease_seconds: 900 }))).toContain("'hold_ms'");
    expect(parseClosedEvent({ reason: 'replaced' })).toEqual({ ok: true, value: { reason: 'replaced' } });
    expect(failing(parseClosedEvent({ reason: 'bored' }))).toContain('expected one of closed, closed_by_operator, lapsed, replaced');
    expect(parseReconnectEvent({ reason: 'hold_bound' })).toEqual({ ok: true, value: { reason: 'hold_bound' } });
  });
  it('hub errors keep the extra keys as details', () => {
    const holder = { home: 'h', host: 'box', pid: 9, since: at, last_seen_at: at };
    expect(parseHubError({ error: { code: 'session_held', message: 'held', holder } })).toEqual({
      ok: true,
      value: { code: 'session_held', message: 'held', details: { holder } },
    });
    expect(parseHubError({ error: { code: 'x' } })).toEqual({ ok: true, value: { code: 'x', message: 'x', details: {} } });
    expect(failing(parseHubError({ message: 'no' }))).toContain("field 'error' must be a JSON object");
  });
});

describe('request validators', () => {
  it('accept well-formed bodies as given', () => {
    const send = { to: 'agent:agt_2#sess_9', intent: 'ask', text: 'hi', session: 'sess_1', idempotency_key: 'k-1' };
    expect(validateSend(send)).toEqual({ ok: true, value: send });
    expect(validateCreateSession({ client_key: 'abc', name: 'b-1', lease_seconds: 0.5, home: 'h', host: 'box', pid: 4 }).ok).toBe(true);
    expect(validateCreateSession({ client_key: 'abc', name: null })).toEqual({ ok: true, value: { client_key: 'abc' } });
    expect(validateRespond({ text: 'yes' })).toEqual({ ok: true, value: { text: 'yes' } });
    expect(validateAck({ session: 'sess_1', acknowledged: ['ent_1'] })).toEqual({ ok: true, value: { session: 'sess_1', acknowledged: ['ent_1'] } });
    expect(validateAck({})).toEqual({ ok: true, value: {} });
    expect(validateDirective({ to: 'agent:agt_1', text: 'go' }).ok).toBe(true);
    expect(validateLift({ agent_id: 'agt_1', name: 'b-1' }).ok).toBe(true);
    expect(validateAccountPatch({ agent_messaging: false })).toEqual({ ok: true, value: { agent_messaging: false } });
    expect(validateMintAgent({ label: 'builder' })).toEqual({ ok: true, value: { label: 'builder' } });
  });
  it.each([
    [validateSend({ to: 'agent:a', intent: 'ask', text: 'x', lease: 1 }), 'invalid_request', "unknown field 'lease'"],
    [validateSend({ to: 'agent:a', intent: 'demand', text: 'x' }), 'invalid_request', 'field \'intent\' is "demand"'],
    [validateSend({ to: 'human:a', intent: 'ask', text: 'x' }), 'invalid_request', 'field \'to\' "human:a" must be agent:'],
    [validateSend({ to: 'agent:a', intent: 'ask', text: '  ' }), 'invalid_request', "field 'text' is empty"],
    [validateSend({ to: 'agent:a', intent: 'ask', text: 'é'.repeat(32_769) }), 'text_too_long', 'the limit is 65536'],
    [validateDirective({ to: 'agent:a', text: 'x'.repeat(65_537) }), 'text_too_long', '65537 bytes'],
    [validateRespond({}), 'invalid_request', "missing required field 'text'"],
    [validateCreateSession({ name: 'x' }), 'invalid_request', "missing required field 'client_key'"],
    [validateCreateSession({ client_key: 'k', name: 'a b' }), 'invalid_request', "field 'name'"],
    [validateCreateSession({ client_key: 'k', pid: -1 }), 'invalid_request', "field 'pid' must be a positive integer"],
    [validateCreateSession({ client_key: 'k', host: 'a b' }), 'invalid_request', "field 'host'"],
    [validateAck({ acknowledged: 'ent_1' }), 'invalid_request', "field 'acknowledged' must be an array"],
    [validateAck({ delivered: ['ok', 'bad id'] }), 'invalid_request', 'delivered[1]'],
    [validateAck({ delivered: Array.from({ length: 1001 }, (_, i) => `e${i}`) }), 'invalid_request', 'at most 1000'],
    [validateLift({ name: 'x' }), 'invalid_request', "missing required field 'agent_id'"],
    [validateAccountPatch({ agent_messaging: 'off' }), 'invalid_request', 'must be true or false'],
    [validateMintAgent({ label: 'a\nb' }), 'invalid_request', 'control character'],
    [validateMintAgent([]), 'invalid_request', 'the body must be a JSON object'],
  ])('%# refused with %s', (r, code, fragment) => {
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.code).toBe(code);
    expect(r.reason).toContain(fragment);
  });
});
