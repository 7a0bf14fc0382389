import { describe, expect, it } from 'vitest';
import {
  canonicalJson,
  checkCapability,
  chooseTransport,
  compareVersions,
  formatAddress,
  formatConsumerHeader,
  formatSignature,
  isPrincipalSender,
  isSessionId,
  parseAddress,
  parseConsumerHeader,
  parseSignature,
  parseVersion,
  validateAgentId,
  validateEntry,
  validateId,
  validateSender,
  validateSessionName,
  type Capability,
} from '../../../src/hub/contract/index.js';

const base = {
  id: 'ent_1',
  from: 'agent:agt_a',
  to: 'agent:agt_b#sess_1',
  created_at: '2026-09-18T14:18:07.000Z',
};

const reasonOf = (r: { ok: boolean; reason?: string }): string => {
  expect(r.ok).toBe(false);
  return r.reason ?? '';
};

describe('validateEntry reasons name the entry, the kind and the field', () => {
  it.each([
    [{ ...base, kind: 'directive', text: 'x', intent: 'ask' }, "entry ent_1 of kind directive carries field 'intent', which belongs to kind message"],
    [
      { ...base, kind: 'receipt', message_id: 'msg_1', status: 'acknowledged', text: 'x' },
      "entry ent_1 of kind receipt carries field 'text', which belongs to kinds directive, message and response",
    ],
    [{ ...base, kind: 'directive', text: 'x', in_reply_to: 'msg_1' }, "carries field 'in_reply_to', which belongs to kinds message and response"],
    [{ ...base, kind: 'directive', text: 'x', x_extra: 1 }, "entry ent_1 of kind directive carries unknown field 'x_extra'"],
    [{ ...base, kind: 'memo', text: 'x' }, 'entry ent_1 has kind "memo"; expected one of directive, message, response, receipt'],
    [{ ...base, text: 'x' }, "entry ent_1 has no 'kind'"],
    [{ ...base, kind: 'message', message_id: 'msg_1', text: 'x' }, "entry ent_1 of kind message: missing required field 'intent'"],
    [{ ...base, kind: 'message', message_id: 'msg_1', intent: 'demand', text: 'x' }, 'field \'intent\' is "demand"; expected one of notify, ask, task'],
    [{ ...base, kind: 'receipt', message_id: 'msg_1', status: 'bounced' }, "a bounced receipt must carry 'prior'"],
    [{ ...base, kind: 'receipt', message_id: 'msg_1', status: 'expired', prior: 'sent' }, 'field \'prior\' is "sent"'],
    [{ ...base, kind: 'receipt', message_id: 'msg_1', status: 'acknowledged', reason: 'Not A Code' }, "field 'reason' must be a snake_case code"],
    [{ ...base, kind: 'directive', text: 'x', created_at: '2026-02-30T00:00:00.000Z' }, "field 'created_at' must be an ISO-8601 instant"],
    [{ ...base, kind: 'directive', text: 'x', created_at: '2026-09-18 14:18:07' }, "field 'created_at' must be an ISO-8601 instant"],
    [{ ...base, kind: 'directive', text: 'x', to: 'human:acct_1' }, 'field \'to\' "human:acct_1" must be agent:<agent_id> or agent:<agent_id>#<session_id>'],
    [{ ...base, kind: 'directive', text: 'x', from: 'robot:x' }, '(or human:<account_id>)'],
    [{ ...base, kind: 'directive', text: 'x', id: 'ent#1' }, "contains '#'"],
    [{ ...base, kind: 'directive', text: 'x', thread_id: 5 }, "field 'thread_id' must be a string"],
    [{ ...base, kind: 'directive', text: 'é'.repeat(32_769) }, "field 'text' is 65538 bytes of UTF-8; the limit is 65536"],
    [{ ...base, id: 7, kind: 'directive', text: 'x' }, 'entry (without an id) of kind directive'],
    ['a string', 'entry must be a JSON object, got "a string"'],
    [null, 'entry must be a JSON object, got null'],
  ])('%#', (entry, fragment) => {
    expect(reasonOf(validateEntry(entry))).toContain(fragment);
  });

  it('accepts text of exactly 65,536 bytes, an empty thread-less directive text, and receipts with or without prior', () => {
    expect(validateEntry({ ...base, kind: 'directive', text: 'x'.repeat(65_536) }).ok).toBe(true);
    expect(validateEntry({ ...base, kind: 'receipt', message_id: 'm', status: 'expired', prior: 'queued', reason: 'message_ttl' }).ok).toBe(true);
    expect(validateEntry({ ...base, kind: 'receipt', message_id: 'm', status: 'expired', reason: 'message_ttl' }).ok).toBe(true);
    expect(validateEntry({ ...base, from: 'human:acct_1', to: 'agent:agt_b', kind: 'directive', text: '' }).ok).toBe(true);
  });
});

describe('address and id grammar', () => {
  it('parses principal and session addresses and formats them back', () => {
    expect(parseAddress('agent:agt_1')).toEqual({ ok: true, value: { agentId: 'agt_1', sessionId: null } });
    expect(parseAddress('agent:agt_1#sess_2')).toEqual({ ok: true, value: { agentId: 'agt_1', sessionId: 'sess_2' } });
    expect(formatAddress('agt_1')).toBe('agent:agt_1');
    expect(formatAddress('agt_1', null)).toBe('agent:agt_1');
    expect(formatAddress('agt_1', 'sess_2')).toBe('agent:agt_1#sess_2');
  });
  it.each([
    ['agent:', 'agent id in address "agent:" is empty'],
    ['agent:a#', 'session id in address "agent:a#" is empty'],
    ['agent:a#b#c', "contains '#'"],
    ['agent:a b', 'contains U+0020'],
    ['agent:a\u2028b', 'contains U+2028'],
    ['agent:a\u0007', 'contains U+0007'],
    ['peer:a', 'must be agent:<agent_id>'],
    [`agent:${'a'.repeat(513)}`, 'is 513 bytes; the limit is 512'],
    [`agent:a#${'s'.repeat(129)}`, 'is 129 bytes; the limit is 128'],
  ])('%j is refused', (s, fragment) => {
    expect(reasonOf(parseAddress(s))).toContain(fragment);
  });
  it('agent ids may be 512 bytes, other ids 128', () => {
    expect(validateAgentId('é'.repeat(256)).ok).toBe(true);
    expect(validateAgentId('é'.repeat(257)).ok).toBe(false);
    expect(validateId('x'.repeat(128), 'id').ok).toBe(true);
    expect(reasonOf(validateId('x'.repeat(129), 'entry id'))).toBe('entry id is 129 bytes; the limit is 128');
    expect(validateAgentId(`it's "fine"`).ok).toBe(false); // whitespace, not the quotes
    expect(validateAgentId(`it's`).ok).toBe(true);
  });
  it('session names, session ids and principal senders', () => {
    expect(validateSessionName('builder-1.a:b_c').ok).toBe(true);
    expect(reasonOf(validateSessionName('x'.repeat(65)))).toContain('1–64 characters');
    expect(validateSessionName('').ok).toBe(false);
    expect(validateSessionName('a/b').ok).toBe(false);
    expect(isSessionId('sess_abc')).toBe(true);
    expect(isSessionId('sess_')).toBe(false);
    expect(isSessionId('builder')).toBe(false);
    expect(isSessionId('sess_a b')).toBe(false);
    expect(isPrincipalSender('human:acct_1')).toBe(true);
    expect(isPrincipalSender('human:')).toBe(false);
    expect(isPrincipalSender('agent:agt_1')).toBe(false);
    expect(validateSender('human:acct_1').ok).toBe(true);
    expect(validateSender('agent:agt_1#sess_1').ok).toBe(true);
  });
});

describe('MA2H-Consumer header', () => {
  it('round-trips and tolerates key order and spacing', () => {
    const c = { home: 'a1b2', host: 'box.local', pid: 42 };
    expect(parseConsumerHeader(formatConsumerHeader(c))).toEqual({ ok: true, value: c });
    expect(formatConsumerHeader(c)).toBe('home=a1b2; host=box.local; pid=42');
    expect(parseConsumerHeader('pid=7;host=h;home=x')).toEqual({ ok: true, value: { home: 'x', host: 'h', pid: 7 } });
  });
  it('sanitises a hostname with other characters when formatting', () => {
    expect(formatConsumerHeader({ home: 'h', host: 'my box (wifi)', pid: 1 })).toBe('home=h; host=my-box--wifi-; pid=1');
    expect(formatConsumerHeader({ home: 'h', host: '', pid: 1 })).toBe('home=h; host=unknown; pid=1');
    expect(formatConsumerHeader({ home: 'h', host: 'x'.repeat(300), pid: 1 })).toBe(`home=h; host=${'x'.repeat(128)}; pid=1`);
  });
  it.each([
    ['home=a; host=b', "missing 'pid='"],
    ['home=a; host=b; pid=0', 'pid "0" must be a positive integer'],
    ['home=a; host=b; pid=1.5', 'must be a positive integer'],
    ['home="a"; host=b; pid=1', 'home must be 1–128 characters'],
    ['home=a; host=b c; pid=1', 'host must be 1–128 characters'],
    ['home=a; host=b; pid=1; x=2', "unknown key 'x'"],
    ['home=a; home=b; host=b; pid=1', "repeats key 'home'"],
    ['', 'is not key=value'],
  ])('%j is refused', (v, fragment) => {
    expect(reasonOf(parseConsumerHeader(v))).toContain(fragment);
  });
});

describe('capability', () => {
  const good = { protocol: 'MA2H', version: '0.5.0', inbound: { session_param: true } };
  it.each([
    [{ ...good, protocol: 'MA3H' }, 'protocol is "MA3H", not MA2H'],
    [{ ...good, version: '0.4.9' }, 'speaks MA2H 0.4.9; oh-hai needs 0.5.0 or later'],
    [{ ...good, version: '0.5.0-rc.1' }, 'speaks MA2H 0.5.0-rc.1'],
    [{ ...good, version: 'five' }, 'not a semantic version'],
    [{ ...good, inbound: { session_param: 'yes' } }, 'inbound.session_param is not true'],
    [{ protocol: 'MA2H', version: '0.5.0' }, "field 'inbound' must be a JSON object"],
    [{ ...good, inbound: { session_param: true, keepalive_seconds: 0 } }, "inbound field 'keepalive_seconds' must be a positive number"],
    [{ ...good, signature_algs: 'hmac-sha256' }, "field 'signature_algs' must be an array of strings"],
    [{ ...good, replay_window_seconds: '120' }, "field 'replay_window_seconds' must be a positive number"],
    [[], 'must be a JSON object'],
  ])('%# refused', (cap, fragment) => {
    expect(reasonOf(checkCapability(cap))).toContain(fragment);
  });
  it('normalises absent fields, ignores unknown ones, keeps fractional numbers', () => {
    const r = checkCapability({ ...good, future: { x: 1 }, inbound: { session_param: true, keepalive_seconds: 0.25 } });
    expect(r.ok).toBe(true);
    const cap = (r as { value: Capability }).value;
    expect(cap.inbound).toEqual({ session_param: true, stream_url: null, max_wait_seconds: null, stream_max_hold_seconds: null, keepalive_seconds: 0.25 });
    expect(cap.signature_algs).toEqual(['hmac-sha256']);
    expect(cap.account).toBeNull();
  });
  it('chooseTransport: explicit sse without a stream falls back to poll; poll is always poll', () => {
    const noStream = checkCapability(good);
    const stream = checkCapability({ ...good, inbound: { session_param: true, stream_url: '/v1/inbox/stream' } });
    if (!noStream.ok || !stream.ok) throw new Error('fixtures must parse');
    expect(chooseTransport(noStream.value, 'sse')).toBe('poll');
    expect(chooseTransport(noStream.value, 'auto')).toBe('poll');
    expect(chooseTransport(stream.value, 'sse')).toBe('sse');
    expect(chooseTransport(stream.value, 'poll')).toBe('poll');
  });
  it('compares versions as semver', () => {
    const v = (s: string) => {
      const r = parseVersion(s);
      if (!r.ok) throw new Error(r.reason);
      return r.value;
    };
    expect(compareVersions(v('0.10.0'), v('0.5.0'))).toBeGreaterThan(0);
    expect(compareVersions(v('0.5'), v('0.5.0'))).toBe(0);
    expect(compareVersions(v('0.5.0-rc.1'), v('0.5.0'))).toBeLessThan(0);
    expect(compareVersions(v('1.0.0+build.7'), v('1.0.0'))).toBe(0);
  });
});

describe('signature syntax reasons', () => {
  const mac = 'a'.repeat(64);
  it.each([
    [`jti=xxxxxxxxxxxxxxxx,t=1,alg=hmac-sha256,v1=${mac}`, 'expected t=… (order t, jti, alg, v1, no spaces)'],
    [`t=01,jti=xxxxxxxxxxxxxxxx,alg=hmac-sha256,v1=${mac}`, 'must be a non-negative integer'],
    [`t=1,jti=xxxxxxxxxxxxxxxx,alg=hmac-sha256,v1=${mac},x=1`, 'has 5 comma-separated fields'],
    [`t=1,jti=short,alg=hmac-sha256,v1=${mac}`, 'must be 16–128 characters'],
    [`t=1,jti=xxxxxxxxxxxxxxxx,alg=hmac-sha512,v1=${mac}`, 'is not hmac-sha256'],
    [`t=1,jti=xxxxxxxxxxxxxxxx,alg=hmac-sha256,v1=${mac.toUpperCase()}`, '64 lowercase hex'],
    ['', 'signature is empty'],
  ])('%j', (value, fragment) => {
    expect(reasonOf(parseSignature(value))).toContain(fragment);
  });
  it('refuses an alg the Hub did not advertise', () => {
    expect(reasonOf(parseSignature(`t=1,jti=xxxxxxxxxxxxxxxx,alg=hmac-sha256,v1=${mac}`, []))).toContain('advertised signature_algs (none)');
  });
  it('formats what it parses', () => {
    const value = `t=1758205087,jti=jti_AbCdEfGhIjKlMnOpQr,alg=hmac-sha256,v1=${mac}`;
    const r = parseSignature(value);
    if (!r.ok) throw new Error(r.reason);
    expect(r.value).toEqual({ t: 1758205087, jti: 'jti_AbCdEfGhIjKlMnOpQr', alg: 'hmac-sha256', v1: mac });
    expect(formatSignature(r.value)).toBe(value);
  });
});

describe('canonicalJson', () => {
  it('keeps U+2028/U+2029 and non-ASCII raw, escapes control characters, drops undefined members', () => {
    expect(canonicalJson({ b: 'x\u2028y\u2029', a: 'é\u0001', u: undefined })).toBe('{"a":"é\\u0001","b":"x\u2028y\u2029"}');
    expect(canonicalJson([undefined, 1.5, -0, true])).toBe('[null,1.5,0,true]');
  });
  it('throws on values JSON cannot carry (a programming error, not wire data)', () => {
    expect(() => canonicalJson(Number.NaN)).toThrow(TypeError);
    expect(() => canonicalJson(10n)).toThrow(TypeError);
  });
});
