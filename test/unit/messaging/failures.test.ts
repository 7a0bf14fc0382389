import { describe, expect, it } from 'vitest';
import { hubFailureError } from '../../../src/cli/messaging/failures.js';
import type { HubFailure } from '../../../src/hub/client/index.js';

const ctx = { hubUrl: 'https://hub.example', credential: 'OH_HAI_TOKEN' as const, doing: 'reading message msg_1' };
const http = (status: number, code: string, message: string): HubFailure => ({ kind: 'http', status, code, message, details: {}, retryAfterSeconds: null });

/** A 404 or 410 a command does not map itself still says where to look (walk12's list, item 6). */
describe('hubFailureError on a 404 or 410', () => {
  it('gives each MA2H code the command that shows what exists', () => {
    const fixes: [HubFailure, RegExp][] = [
      [
        http(404, 'message_not_found', 'no message msg_1 that this token may read'),
        /; check the id against `oh-hai messages list` and `oh-hai messages list --received`$/,
      ],
      [
        http(404, 'session_not_found', 'no session sess_1 for agent agt_1'),
        /; check the session against `oh-hai fleet ls --sessions`, or drop --session \/ MA2H_SESSION_ID$/,
      ],
      [http(404, 'agent_not_found', 'no agent agt_1 in this account'), /; check the agent against `oh-hai fleet ls`$/],
      [
        http(410, 'session_lapsed', 'session sess_1 is lapsed; it receives no more mail'),
        /; that session has ended and takes no more mail: address a live one from `oh-hai fleet ls --sessions`, or the agent's agent:<id>$/,
      ],
      [http(410, 'session_closed_by_operator', 'session sess_1 is closed by operator'), /takes no more mail: address a live one/],
    ];
    for (const [f, fix] of fixes) {
      const e = hubFailureError(f, ctx);
      expect(e.exit).toBe(4);
      expect(e.message).toMatch(/^reading message msg_1 failed: 4\d\d \w+: /);
      expect(e.message).toMatch(fix);
    }
  });

  it('a 404 that names no resource (no such endpoint, or no MA2H body) is the URL: exit 13 and how to check it', () => {
    for (const f of [
      http(404, 'not_found', 'no such endpoint: GET /v1/whoami'),
      http(404, 'http_404', 'HTTP 404 without an MA2H error body: <html>'),
      http(410, 'http_410', 'HTTP 410 without an MA2H error body'),
    ]) {
      const e = hubFailureError(f, ctx);
      expect(e.exit).toBe(13);
      expect(e.message).toMatch(/^https:\/\/hub\.example has no such endpoint \(reading message msg_1: 4\d\d \w+: /);
      expect(e.message).toMatch(/check the Hub URL \(--hub, MA2H_HUB_URL or \[hub\] url\) with `oh-hai doctor`$/);
    }
  });
});
