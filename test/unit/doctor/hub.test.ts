import { describe, expect, it } from 'vitest';
import { capabilityCheck, clockCheck, credentialCheck, hubCheck, measureOffset, type CapabilityProbe } from '../../../src/cli/doctor/checks/hub.js';
import { nodeCheck } from '../../../src/cli/doctor/checks/node.js';
import type { AgentCredential } from '../../../src/config/index.js';
import type { Coded } from '../../../src/core/index.js';
import { checkCapability, type Capability, type Whoami } from '../../../src/hub/contract/index.js';
import type { HubResult } from '../../../src/hub/client/index.js';

const NOW = Date.parse('2027-01-15T08:00:00.000Z');

function capability(over: Record<string, unknown> = {}): Capability {
  const r = checkCapability({
    protocol: 'MA2H',
    version: '0.5.0',
    server_time: new Date(NOW + 10).toISOString(),
    inbound: { session_param: true, stream_url: '/v1/inbox/stream' },
    replay_window_seconds: 120,
    ...over,
  });
  if (!r.ok) throw new Error(r.reason);
  return r.value;
}

const probe = (result: HubResult<Capability>, beforeMs = NOW, afterMs = NOW + 20): CapabilityProbe => ({
  result,
  beforeMs,
  afterMs,
  tookMs: afterMs - beforeMs,
});
const okCap = (cap: Capability, serverDate: string | null = null): HubResult<Capability> => ({ ok: true, status: 200, value: cap, serverDate });

describe('node', () => {
  it('passes 20.18.1 and later, fails older, with the version in measured', () => {
    expect(nodeCheck('20.18.1').status).toBe('pass');
    expect(nodeCheck('v22.3.0')).toMatchObject({ status: 'pass', measured: { version: '22.3.0' } });
    expect(nodeCheck('20.18.0')).toMatchObject({ status: 'fail', fix: /20\.18\.1 or later/ });
    expect(nodeCheck('18.19.0').status).toBe('fail');
  });
});

describe('hub and capability', () => {
  it('a network failure fails hub and skips capability', () => {
    const p = probe({ ok: false, failure: { kind: 'network', message: 'GET /v1/capability: connect ECONNREFUSED' } });
    expect(hubCheck('http://127.0.0.1:9', p)).toMatchObject({ status: 'fail', detail: /cannot reach .*ECONNREFUSED/ });
    expect(capabilityCheck(p, 'auto').status).toBe('skip');
  });

  it('a 5xx answer fails hub', () => {
    const p = probe({ ok: false, failure: { kind: 'http', status: 503, code: 'unavailable', message: 'injected', details: {}, retryAfterSeconds: null } });
    expect(hubCheck('http://h', p)).toMatchObject({ status: 'fail', detail: /503 unavailable/ });
  });

  it('an unacceptable document: the Hub answered (pass), the capability fails with the reason', () => {
    const p = probe({
      ok: false,
      failure: { kind: 'protocol', message: 'GET /v1/capability answered 200 with the Hub speaks MA2H 0.4.2; oh-hai needs 0.5.0 or later' },
    });
    expect(hubCheck('http://h', p).status).toBe('pass');
    expect(capabilityCheck(p, 'auto')).toMatchObject({ status: 'fail', detail: /0\.4\.2/, fix: /MA2H 0\.5/ });
  });

  it('names the transport: SSE when advertised, long-poll otherwise or when configured', () => {
    expect(capabilityCheck(probe(okCap(capability())), 'auto')).toMatchObject({ status: 'pass', measured: { transport: 'sse', version: '0.5.0' } });
    expect(capabilityCheck(probe(okCap(capability())), 'poll').detail).toMatch(/long-poll \(transport set to poll\)/);
    const noStream = capability({ inbound: { session_param: true } });
    expect(capabilityCheck(probe(okCap(noStream)), 'auto').detail).toMatch(/advertises no stream/);
  });
});

describe('clock', () => {
  it('measures against server_time at the middle of the call, with half the round trip as its uncertainty', () => {
    const m = measureOffset(probe(okCap(capability({ server_time: new Date(NOW + 10 + 7000).toISOString() }))));
    expect(m).toMatchObject({ offsetMs: 7000, uncertaintyMs: 10 });
  });

  it('falls back to the Date header (whole seconds) when there is no server_time', () => {
    const cap = capability({ server_time: undefined });
    const m = measureOffset(probe(okCap(cap, new Date(NOW - 30_000).toUTCString()), NOW, NOW + 1000));
    expect(m?.offsetMs).toBe(-30_000 + 500 - 500);
    expect(m?.uncertaintyMs).toBe(1000);
    expect(measureOffset(probe(okCap(cap)))).toBeNull();
  });

  it('passes a small offset, warns past 5 s, fails past the replay window, saying which way and by how much', () => {
    expect(clockCheck({ offsetMs: 800, uncertaintyMs: 5, source: 's' }, 120, 'w').status).toBe('pass');
    const ahead = clockCheck({ offsetMs: 7000, uncertaintyMs: 5, source: 's' }, 120, 'w');
    expect(ahead).toMatchObject({ status: 'warn', measured: { offset_ms: 7000 } });
    expect(ahead.detail).toMatch(/7\.0 s ahead of this machine's/);
    const behind = clockCheck({ offsetMs: -200_000, uncertaintyMs: 5, source: 's' }, 120, "the Hub's capability");
    expect(behind).toMatchObject({ status: 'fail', fix: /NTP/ });
    expect(behind.detail).toMatch(/200\.0 s behind .*more than the 120 s replay window.*stale t/);
  });

  it('does not fail when the uncertainty could put it back inside the window; a small window warns earlier', () => {
    expect(clockCheck({ offsetMs: 121_000, uncertaintyMs: 2000, source: 's' }, 120, 'w').status).toBe('warn');
    expect(clockCheck({ offsetMs: 3000, uncertaintyMs: 0, source: 's' }, 4, 'w').status).toBe('warn');
    expect(clockCheck(null, 120, 'w').status).toBe('warn');
  });
});

describe('credential', () => {
  const ctx = { hubUrl: 'http://h', credentialsFile: '/c/credentials.json' };
  const cred = (over: Partial<AgentCredential> = {}): Coded<AgentCredential> => ({
    ok: true,
    value: { token: 'SECRET-TOKEN-123', agentId: 'agt_1', label: null, source: 'MA2H_AGENT_TOKENS', warnings: [], ...over },
  });
  const who = (id: string): HubResult<Whoami> => ({
    ok: true,
    status: 200,
    serverDate: null,
    value: { kind: 'agent', agent: { id, label: 'builder', account_id: 'acct_1' } },
  });

  it('passes, naming the source and never the token', () => {
    const c = credentialCheck(cred(), who('agt_1'), ctx);
    expect(c.check).toMatchObject({ status: 'pass', detail: /MA2H_AGENT_TOKENS; the Hub accepts it as agent agt_1 "builder"/ });
    expect(JSON.stringify(c.check)).not.toContain('SECRET');
    expect(c.agentId).toBe('agt_1');
    expect(credentialCheck(cred({ source: 'credentials' }), who('agt_1'), ctx).check.detail).toContain('the credentials file /c/credentials.json');
  });

  it('learns the agent id of a bare OH_HAI_TOKEN from whoami', () => {
    const c = credentialCheck(cred({ source: 'OH_HAI_TOKEN', agentId: null }), who('agt_9'), ctx);
    expect(c).toMatchObject({ agentId: 'agt_9', check: { status: 'pass', detail: /OH_HAI_TOKEN/ } });
  });

  it('fails with no credential, a refused one, a human token, or an id the Hub contradicts', () => {
    const none: Coded<AgentCredential> = { ok: false, error: { code: 'no_credential', message: 'no agent credential for http://h', exit: 3 } };
    expect(credentialCheck(none, null, ctx).check).toMatchObject({ status: 'fail', fix: /oh-hai login --hub http:\/\/h/ });
    const refused: HubResult<Whoami> = {
      ok: false,
      failure: { kind: 'http', status: 401, code: 'unauthorized', message: 'revoked', details: {}, retryAfterSeconds: null },
    };
    expect(credentialCheck(cred(), refused, ctx).check).toMatchObject({ status: 'fail', detail: /refused it/ });
    const human: HubResult<Whoami> = { ok: true, status: 200, serverDate: null, value: { kind: 'human', account: { id: 'acct_1', label: null } } };
    expect(credentialCheck(cred(), human, ctx).check).toMatchObject({ status: 'fail', detail: /human token/ });
    expect(credentialCheck(cred(), who('agt_2'), ctx).check).toMatchObject({ status: 'fail', detail: /agt_1.*agt_2/ });
  });

  it('warns when the Hub could not be asked', () => {
    expect(credentialCheck(cred(), null, ctx).check.status).toBe('warn');
  });
});
