import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { fakeClock } from '../../../src/util/clock.js';
import { appendLog, redact } from '../../../src/spool/index.js';
import { tempDir } from './tmp.js';

describe('bridge.log', () => {
  it('writes `<ISO> <pid> <text>` lines, one per event, 0600', () => {
    const dir = tempDir();
    const ctx = { clock: fakeClock(Date.parse('2026-09-18T14:33:07.000Z')), pid: 777 };
    expect(appendLog(dir, 'consumer started', ctx)).toBe(true);
    expect(appendLog(dir, 'two\nlines\r\n', ctx)).toBe(true);
    const file = path.join(dir, 'bridge.log');
    expect(readFileSync(file, 'utf8')).toBe('2026-09-18T14:33:07.000Z 777 consumer started\n2026-09-18T14:33:07.000Z 777 two\\nlines\\r\\n\n');
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });

  it('never writes a token', () => {
    const dir = tempDir();
    const token = 'ohh_live_4f9c2a7be1d04c55a1f0';
    appendLog(dir, `GET /v1/inbox failed; Authorization: Bearer ${token}; env OH_HAI_TOKEN=${token} body {"token":"${token}"} raw ${token}`, {
      clock: fakeClock(0),
      pid: 1,
      deny: [token],
    });
    const text = readFileSync(path.join(dir, 'bridge.log'), 'utf8');
    expect(text).not.toContain(token);
    expect(text).not.toContain('4f9c2a7b');
    expect(text).toContain('Bearer [redacted]');
  });

  it('redacts token shapes even when the value is not in the deny list', () => {
    expect(redact('authorization: bearer abc.def-123')).toBe('authorization: bearer [redacted]');
    expect(redact('MA2H_AGENT_TOKENS=agt_1=tok1,agt_2=tok2 next')).toBe('MA2H_AGENT_TOKENS=[redacted] next');
    expect(redact('{"access_token": "x\\"y", "id": "e1"}')).toBe('{"access_token": "[redacted]", "id": "e1"}');
    expect(redact('entry e1 spooled at seq 3 under sess_a')).toBe('entry e1 spooled at seq 3 under sess_a');
  });

  it('a log that cannot be written does not throw', () => {
    expect(appendLog(path.join(tempDir(), 'missing', 'dir'), 'x', { clock: fakeClock(0), pid: 1 })).toBe(false);
  });
});
