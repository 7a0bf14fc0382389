import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyMac } from '../../../src/hub/contract/index.js';
import { defaultHubConfig } from '../../../src/hub/server/config.js';
import { REHEARSED_PUSHES, rehearsePush } from '../../../src/hub/server/rehearse.js';
import type { HubServer } from '../../../src/hub/server/server.js';
import { systemClock } from '../../../src/util/clock.js';
import { inProcessHub, statementsRun } from '../../integration/hub/in-process.js';

// Issue 19 row 3: a fresh Hub's first push ran the push path for the first time (V8 compiling each
// function, OpenSSL fetching its HMAC): 2–3 ms of CPU against ~0.3 ms for the pushes after. The Hub
// now rehearses it right after it listens, on stand-ins: nothing read from or written to the store,
// nothing sent, counted or registered. Counted, never timed.

/** The `entries` events in the bytes an SSE response wrote (chunked): each delivery's entry and signature. */
function deliveries(written: string): Array<{ entry: Record<string, unknown>; signature: string }> {
  return [...written.matchAll(/^event: entries\ndata: (.*)$/gm)].flatMap(
    (m) => (JSON.parse(m[1]!) as { messages: Array<{ entry: Record<string, unknown>; signature: string }> }).messages,
  );
}

describe('the push rehearsal', () => {
  it('runs the whole push: each made-up entry paged from memory, signed with the Hub key and written as an entries event', async () => {
    const config = defaultHubConfig({ dataDir: '/nonexistent', signingKey: 'rehearsal-key', version: 'test' });
    const written = await rehearsePush(config, systemClock);
    expect(written).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(written).toContain('Transfer-Encoding: chunked');
    expect(written).toContain('event: open\n');
    const pushed = deliveries(written);
    expect(pushed.map((d) => d.entry.id)).toEqual(Array.from({ length: REHEARSED_PUSHES }, (_, i) => `ent_rehearsal_${i + 1}`));
    for (const d of pushed) expect(verifyMac('rehearsal-key', d.signature, d.entry)).toBe(true);
    // The response ended with the stream, like any held stream's.
    expect(written.endsWith('0\r\n\r\n')).toBe(true);
  });

  describe('at a Hub start', () => {
    let dir = '';
    let hub: HubServer | undefined;
    beforeAll(async () => {
      dir = mkdtempSync(path.join(os.tmpdir(), 'oh-hai-rehearse-'));
      hub = await inProcessHub(dir);
    });
    afterAll(async () => {
      await hub?.close();
      rmSync(dir, { recursive: true, force: true });
    });

    it('is run once the Hub listens, and every one of its pushes is written', async () => {
      expect(await hub!.pushRehearsed).toBe(true);
    });

    it('runs no statement on the store and counts no push', async () => {
      const ran = await statementsRun(hub!, () => rehearsePush(hub!.core.config, hub!.core.clock));
      expect(ran).toEqual([]);
      expect(hub!.core.streams.count()).toBe(0);
    });
  });
});
