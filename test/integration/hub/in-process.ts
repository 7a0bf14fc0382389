import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import { afterAll, beforeAll, expect } from 'vitest';
import path from 'node:path';
import type { Entry } from '../../../src/hub/contract/index.js';
import { defaultHubConfig } from '../../../src/hub/server/config.js';
import { newId } from '../../../src/hub/server/ids.js';
import { createHubServer, type HubServer } from '../../../src/hub/server/server.js';
import { systemClock } from '../../../src/util/clock.js';
import type { SseConn } from './sse.js';

/** A notify message entry to `to` (an address) saying `text`, for inserting straight into a store. */
export const notifyEntry = (to: string, text: string): Entry => ({
  id: newId('ent'),
  kind: 'message',
  from: 'agent:agt_sender',
  to,
  created_at: new Date().toISOString(),
  message_id: newId('msg'),
  intent: 'notify',
  text,
});

/** A reference Hub in this process on a free loopback port, its data in `<dir>/hub`: for tests that count what its store runs. */
export const inProcessHub = (dir: string): Promise<HubServer> =>
  createHubServer({
    config: { ...defaultHubConfig({ dataDir: path.join(dir, 'hub'), signingKey: 'k', version: 'test' }), port: 0 },
    clock: systemClock,
    pid: process.pid,
    log: () => undefined,
  });

/** `token` calls `method path` on an in-process Hub: its JSON answer; a status of 300 or more fails the test, naming the answer. */
export async function callHub(hub: HubServer, token: string, method: string, p: string, body?: unknown): Promise<Record<string, any>> {
  const res = await fetch(hub.url + p, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const json = (await res.json()) as Record<string, any>;
  expect(res.status, JSON.stringify(json)).toBeLessThan(300);
  return json;
}

/** One in-process Hub for a test file: {@link inProcessHub} before its tests, closed after them with the streams they opened. */
export interface HubFixture {
  readonly hub: HubServer;
  /** The account's human token. */
  readonly human: string;
  /** Streams a test opened: closed with the Hub. */
  readonly streams: SseConn[];
  call(token: string, method: string, p: string, body?: unknown): Promise<Record<string, any>>;
}

export function inProcessFixture(name: string): HubFixture {
  let dir = '';
  let hub: HubServer | null = null;
  let human = '';
  const streams: SseConn[] = [];
  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), `oh-hai-${name}-`));
    hub = await inProcessHub(dir);
    human = readFileSync(hub.humanTokenPath!, 'utf8').trim();
  });
  afterAll(async () => {
    for (const s of streams) s.close();
    await hub?.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return {
    get hub() {
      return hub!;
    },
    get human() {
      return human;
    },
    streams,
    call: (token, method, p, body) => callHub(hub!, token, method, p, body),
  };
}
