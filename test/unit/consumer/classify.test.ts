import { describe, expect, it } from 'vitest';
import { classifyClosed, classifyFailure, endedCode, type FailureContext } from '../../../src/consumer/classify.js';
import type { HubFailure } from '../../../src/hub/client/index.js';

const http = (status: number, code: string, details: Record<string, unknown> = {}, retryAfterSeconds: number | null = null): HubFailure => ({
  kind: 'http',
  status,
  code,
  message: `the Hub says ${code}`,
  details,
  retryAfterSeconds,
});

const unpinned: FailureContext = { operation: 'stream connect', sessionId: 'sess_a', pinned: null };
const pinned: FailureContext = { operation: 'stream connect', sessionId: 'sess_p', pinned: 'sess_p' };

describe('classifyFailure (MA2H §0)', () => {
  const stops: [string, HubFailure, FailureContext, number, string][] = [
    ['401', http(401, 'unauthorized'), unpinned, 3, 'unauthorized'],
    ['messaging off', http(403, 'messaging_disabled'), unpinned, 3, 'messaging_disabled'],
    ['a human token', http(403, 'forbidden'), unpinned, 3, 'forbidden'],
    ['the kill-switch', http(403, 'session_closed_by_operator'), unpinned, 14, 'session_closed_by_operator'],
    [
      'another home holds it',
      http(409, 'session_held', { holder: { pid: 7, host: 'h2', home: 'x', since: 'S', last_seen_at: 'L' } }),
      unpinned,
      10,
      'session_held',
    ],
    ['the agent closed it', http(410, 'session_closed'), unpinned, 15, 'session_closed'],
    ['a pinned session unknown', http(404, 'session_not_found'), pinned, 4, 'session_not_found'],
    ['a pinned session lapsed', http(410, 'session_lapsed'), pinned, 11, 'session_lapsed'],
  ];
  for (const [what, failure, ctx, exit, reason] of stops) {
    it(`${what} → stop ${exit} (${reason})`, () => {
      const d = classifyFailure(failure, ctx);
      expect(d).toMatchObject({ kind: 'stop', stop: { exit, reason } });
      if (d.kind === 'stop')
        expect(d.stop.message).toMatch(new RegExp(`^${ctx.operation} on ${ctx.sessionId}: HTTP ${(failure as { status: number }).status}`));
    });
  }

  it('names the holder of a held session, with its instants labelled as the Hub\u2019s', () => {
    const d = classifyFailure(http(409, 'session_held', { holder: { pid: 7, host: 'h2', home: 'x', since: 'S', last_seen_at: 'L' } }), unpinned);
    expect(d.kind === 'stop' && d.stop.message).toMatch(/held by pid 7 on host h2 \(home x\), holding since S and last seen L \(Hub's clock\).*Do not kill it/);
  });

  it('an unpinned session that lapsed or vanished is replaced, not a stop', () => {
    expect(classifyFailure(http(410, 'session_lapsed'), unpinned)).toMatchObject({ kind: 'reregister', reason: 'session_lapsed' });
    expect(classifyFailure(http(404, 'session_not_found'), unpinned)).toMatchObject({ kind: 'reregister', reason: 'session_not_found' });
  });

  it('network errors, 5xx, 429 (with its retry-after), malformed answers and unknown codes are faults', () => {
    expect(classifyFailure({ kind: 'network', message: 'ECONNREFUSED' }, unpinned)).toMatchObject({ kind: 'fault', retryAfterSeconds: null });
    expect(classifyFailure(http(503, 'unavailable'), unpinned)).toMatchObject({ kind: 'fault' });
    expect(classifyFailure(http(429, 'rate_limited', {}, 12), unpinned)).toMatchObject({ kind: 'fault', retryAfterSeconds: 12 });
    expect(classifyFailure({ kind: 'protocol', message: 'not JSON' }, unpinned)).toMatchObject({ kind: 'fault' });
    expect(classifyFailure(http(409, 'too_many_sessions'), unpinned)).toMatchObject({ kind: 'fault', message: /too_many_sessions/ });
  });
});

describe('classifyClosed (event: closed on a held stream)', () => {
  it('replaced → a quiet stop with 0', () => {
    expect(classifyClosed('replaced', unpinned)).toMatchObject({ kind: 'stop', stop: { exit: 0, reason: 'replaced' } });
  });
  it('closed → 15, closed_by_operator → 14, the same as the matching error code', () => {
    expect(classifyClosed('closed', unpinned)).toMatchObject({ kind: 'stop', stop: { exit: 15 } });
    expect(classifyClosed('closed_by_operator', unpinned)).toMatchObject({ kind: 'stop', stop: { exit: 14 } });
  });
  it('lapsed → replaced when unpinned, 11 when pinned', () => {
    expect(classifyClosed('lapsed', unpinned)).toMatchObject({ kind: 'reregister', reason: 'session_lapsed' });
    expect(classifyClosed('lapsed', pinned)).toMatchObject({ kind: 'stop', stop: { exit: 11 } });
  });
});

describe('what a classified failure says', () => {
  it('describes each kind of failure, naming the operation and, when there is one, the session', () => {
    expect(classifyFailure({ kind: 'network', message: 'ECONNREFUSED' }, unpinned)).toEqual({
      kind: 'fault',
      message: 'stream connect on sess_a: network error: ECONNREFUSED',
      retryAfterSeconds: null,
    });
    expect(classifyFailure({ kind: 'protocol', message: 'not JSON' }, { operation: 'principal drain', sessionId: null, pinned: null })).toEqual({
      kind: 'fault',
      message: "principal drain: the Hub's answer did not follow MA2H: not JSON",
      retryAfterSeconds: null,
    });
  });

  it('an auth stop says how a human fixes the credential', () => {
    const d = classifyFailure(http(401, 'unauthorized'), unpinned);
    expect(d.kind === 'stop' && d.stop.message).toContain('oh-hai login --token-stdin < token-file');
  });

  it('a holder the Hub did not describe, or described in part', () => {
    for (const details of [{}, { holder: null }, { holder: 'pid 7' }]) {
      const d = classifyFailure(http(409, 'session_held', details), unpinned);
      expect(d.kind === 'stop' && d.stop.message).toContain('another home already drains this session, the Hub did not name the holder.');
    }
    const partial = classifyFailure(http(409, 'session_held', { holder: { pid: 7, host: { x: 1 }, since: true } }), unpinned);
    expect(partial.kind === 'stop' && partial.stop.message).toContain('held by pid 7 on host ? (home ?), holding since ? and last seen ?');
  });

  it('a closed event names the stream, the session and the reason', () => {
    const replaced = classifyClosed('replaced', unpinned);
    expect(replaced.kind === 'stop' && replaced.stop.message).toBe(
      'stream connect on sess_a: the Hub ended the stream (event closed, reason replaced) — another consumer of this same home took the session over; it is the one draining now',
    );
    const closed = classifyClosed('closed', unpinned);
    expect(closed.kind === 'stop' && closed.stop.message).toMatch(/^stream connect on sess_a: the Hub ended the stream \(event closed, reason closed\) — /);
  });

  it('endedCode maps a terminal session state to the code MA2H uses for it', () => {
    expect([endedCode('lapsed'), endedCode('closed'), endedCode('closed_by_operator')]).toEqual([
      'session_lapsed',
      'session_closed',
      'session_closed_by_operator',
    ]);
  });
});
