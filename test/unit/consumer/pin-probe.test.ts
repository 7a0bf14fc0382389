import { describe, expect, it } from 'vitest';
import { probePin } from '../../../src/consumer/session.js';
import type { HubFailure, HubResult } from '../../../src/hub/client/index.js';
import type { Session } from '../../../src/hub/contract/index.js';

const session = (id: string, agentId: string): Session => ({
  id,
  agent_id: agentId,
  address: `agent:${agentId}#${id}`,
  name: null,
  state: 'active',
  lease_seconds: 600,
  expires_at: '2026-01-01T00:10:00Z',
  last_renewed_at: '2026-01-01T00:00:00Z',
  created_at: '2026-01-01T00:00:00Z',
  closed_at: null,
  holder: null,
});

const http = (status: number, code: string): HubFailure => ({ kind: 'http', status, code, message: code, details: {}, retryAfterSeconds: null });

/** What the Hub answers GET /v1/sessions/<value> with; the asked path is kept. */
function hub(answer: HubResult<Session>): { asked: string[]; getSession(id: string): Promise<HubResult<Session>> } {
  const asked: string[] = [];
  return {
    asked,
    getSession: async (id) => {
      asked.push(id);
      return answer;
    },
  };
}

const found = (s: Session): HubResult<Session> => ({ ok: true, status: 200, value: s, serverDate: null });
const failed = (failure: HubFailure): HubResult<Session> => ({ ok: false, failure });
const probe = (answer: HubResult<Session>) => probePin(hub(answer), 'run.rivr4t6jdz', 'pa.1', new AbortController().signal);

describe('probePin: is a declared name one of this agent’s Hub sessions?', () => {
  it('asks for exactly the value, and a session of this agent under that id pins it', async () => {
    const h = hub(found(session('run.rivr4t6jdz', 'pa.1')));
    expect(await probePin(h, 'run.rivr4t6jdz', 'pa.1', new AbortController().signal)).toEqual({ kind: 'id' });
    expect(h.asked).toEqual(['run.rivr4t6jdz']);
  });

  it('a lapsed or closed session of this agent still pins (the pinned path then exits 11 or stops)', async () => {
    expect(await probe(found({ ...session('run.rivr4t6jdz', 'pa.1'), state: 'lapsed' }))).toEqual({ kind: 'id' });
  });

  it.each([
    ['404 session_not_found', failed(http(404, 'session_not_found'))],
    ['403 forbidden', failed(http(403, 'forbidden'))],
    ['400 a refusal of the id', failed(http(400, 'invalid_request'))],
    ["another agent's session", found(session('run.rivr4t6jdz', 'pa.2'))],
    ['another id than asked', found(session('sess_other', 'pa.1'))],
  ])('%s → a name', async (_, answer) => {
    expect(await probe(answer)).toMatchObject({ kind: 'name', why: expect.any(String) });
  });

  it.each([
    ['a network error', failed({ kind: 'network', message: 'ECONNREFUSED' }), 'fault'],
    ['a 503', failed(http(503, 'unavailable')), 'fault'],
    ['a 429', failed(http(429, 'rate_limited')), 'fault'],
    ['a malformed answer', failed({ kind: 'protocol', message: 'not JSON' }), 'fault'],
    ['401', failed(http(401, 'unauthorized')), 'stop'],
    ['messaging switched off', failed(http(403, 'messaging_disabled')), 'stop'],
  ])('%s leaves it undecided (%s): never a guess', async (_, answer, kind) => {
    const r = await probe(answer);
    expect(r.kind).toBe('undecided');
    expect(r.kind === 'undecided' && r.disposition.kind).toBe(kind);
  });
});
