import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import { afterAll, beforeAll, expect } from 'vitest';
import path from 'node:path';
import type { Entry } from '../../../src/hub/contract/index.js';
import { defaultHubConfig } from '../../../src/hub/server/config.js';
import { newId } from '../../../src/hub/server/ids.js';
import { createHubServer, type HubServer } from '../../../src/hub/server/server.js';
import { bindNow, insertStatement, type Insert, type Param, type Sql, type Store } from '../../../src/hub/server/sql.js';
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

/**
 * One statement as an in-process Hub's store ran it: outside a unit (`read`), in one (`tx`), or as a
 * one-statement unit (`once`, its `?now` bound as the SQLite store binds it). A locked insert is one
 * entry, `locked insert <tables>`, with the INSERTs it runs in `inserts`.
 */
export interface RanStatement {
  where: 'read' | 'tx' | 'once';
  sql: string;
  params: Param[];
  inserts?: Array<{ sql: string; params: Param[] }>;
}

/** Every statement `hub`'s store runs while `fn` runs, in order. */
export async function statementsRun(hub: HubServer, fn: () => Promise<unknown>): Promise<RanStatement[]> {
  const seen: RanStatement[] = [];
  const recording = (q: Sql, where: RanStatement['where']): Sql => ({
    get: <T>(sql: string, ...params: Param[]) => (seen.push({ where, sql, params }), q.get<T>(sql, ...params)),
    all: <T>(sql: string, ...params: Param[]) => (seen.push({ where, sql, params }), q.all<T>(sql, ...params)),
    run: (sql: string, ...params: Param[]) => (seen.push({ where, sql, params }), q.run(sql, ...params)),
  });
  const store = hub.core.store as { write: Store['write']; read: Sql; once: Store['once'] };
  const [original, read, originalOnce] = [store.write, store.read, store.once];
  const write = original.bind(store);
  const once = originalOnce.bind(store);
  store.write = (unit) =>
    write((tx) =>
      unit({
        ...tx,
        ...recording(tx, 'tx'),
        insertLocked: (agentId: string, ...ins: [Insert, ...Insert[]]) => (
          seen.push({ where: 'tx', sql: `locked insert ${ins.map((i) => i.table).join(' + ')}`, params: [], inserts: ins.map((i) => insertStatement(i)) }),
          tx.insertLocked(agentId, ...ins)
        ),
      }),
    );
  store.read = recording(read, 'read');
  store.once = (sql, params, committed) => (seen.push({ where: 'once', ...bindNow(sql, params, Date.now()) }), once(sql, params, committed));
  try {
    await fn();
  } finally {
    store.write = original;
    store.read = read;
    store.once = originalOnce;
  }
  return seen;
}
