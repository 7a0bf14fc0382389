import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach } from 'vitest';
import { listStateDirs, parseConsumerRecord, readRecord, sessionStateDir, stateKey, type ConsumerRecord } from '../../../src/spool/index.js';
import { collect, runOhHai, startOhHai, type RunResult } from '../../helpers/cli.js';
import { tempEnv, type TempEnv } from '../../helpers/env.js';
import type { StartHubOptions, TestHub } from '../../helpers/hub.js';
import { killAndWait, processesMentioning } from '../../helpers/process.js';
import { waitFor } from '../../helpers/wait.js';
import { undoAfterEach, useHub } from '../../helpers/world.js';

/** One agent with its own HOME and state root, running the real CLI against a real Hub. */
export interface Agent {
  id: string;
  token: string;
  temp: TempEnv;
  env: NodeJS.ProcessEnv;
  stateRoot: string;
}

/** Short holds and leases so the suite runs in seconds (every interval has a knob). */
export const QUICK_HUB: StartHubOptions = {
  faults: true,
  args: ['--stream-max-hold-seconds', '0.5', '--lease-min-seconds', '1', '--keepalive-seconds', '0.2'],
};

/** A bridge test file's world: one quick Hub, and what each test makes, undone after it. */
export interface BridgeWorld {
  readonly hub: TestHub;
  /** A new agent with a HOME of its own; its connections are stopped and its HOME removed after the test. */
  agent(env?: NodeJS.ProcessEnv): Promise<Agent>;
  /** A new directory (another state home, a project folder), removed after the test. */
  tempDir(prefix: string): string;
}

export function useBridgeWorld(): BridgeWorld {
  const world = useHub(QUICK_HUB);
  // After hooks run in reverse and a throwing one ends the rest: clearing the faults goes last, after every process is gone.
  afterEach(async () => {
    await world.hub.faults([]);
  });
  const keepDir = undoAfterEach((dir: string) => rmSync(dir, { recursive: true, force: true }));
  const keepAgent = undoAfterEach(async (a: Agent) => {
    await stopConsumers(a);
    a.temp.cleanup();
  });
  return {
    get hub() {
      return world.hub;
    },
    agent: async (env = {}) => keepAgent(await agent(world.hub, env)),
    tempDir: (prefix) => keepDir(mkdtempSync(path.join(os.tmpdir(), prefix))),
  };
}

export async function agent(hub: TestHub, env: NodeJS.ProcessEnv = {}): Promise<Agent> {
  const a = await hub.mintAgent('bridge-test');
  const temp = tempEnv({
    MA2H_HUB_URL: hub.url,
    MA2H_AGENT_TOKENS: `${a.id}=${a.token}`,
    OH_HAI_HEARTBEAT_MS: '100',
    OH_HAI_BACKOFF_MIN_MS: '10',
    OH_HAI_BACKOFF_MAX_MS: '50',
    OH_HAI_UNATTENDED_MAX_SECONDS: '120',
    ...env,
  });
  return { id: a.id, token: a.token, temp, env: temp.env, stateRoot: temp.env.XDG_STATE_HOME! };
}

export const bridge = (a: Agent, session: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<RunResult> =>
  runOhHai(['bridge', ...args], { env: { ...a.env, MA2H_AGENT_SESSION_ID: session, ...env } });

export const startBridge = (a: Agent, session: string, args: string[], env: NodeJS.ProcessEnv = {}) => {
  const child = startOhHai(['bridge', ...args], { env: { ...a.env, MA2H_AGENT_SESSION_ID: session, ...env } });
  return { child, done: collect(child) };
};

export const stateDirOf = (a: Agent, hub: TestHub, session: string): string => sessionStateDir(a.stateRoot, stateKey(hub.url, a.id, session));

export function consumerOf(dir: string): ConsumerRecord | null {
  const r = readRecord(dir, 'consumer.json', parseConsumerRecord);
  return r.state === 'ok' ? r.value : null;
}

export function sessionIdOf(dir: string): string | null {
  try {
    return (JSON.parse(readFileSync(`${dir}/session.json`, 'utf8')) as { id: string }).id;
  } catch {
    return null;
  }
}

/** Wait for the connection to register its session; on a timeout, say what bridge.log says. */
export async function registered(dir: string): Promise<string> {
  try {
    return await waitFor(() => sessionIdOf(dir), { timeoutMs: 40_000, what: 'the connection to register its session' });
  } catch (e) {
    let log = '(no bridge.log)';
    try {
      log = readFileSync(`${dir}/bridge.log`, 'utf8');
    } catch {
      // keep the placeholder
    }
    throw new Error(`${(e as Error).message}\nbridge.log:\n${log}`);
  }
}

/** The entries in the spool's current segment, in order: each one's message id and when the connection received it (ms). */
export function spooledEntries(dir: string): { messageId: string; receivedAt: number }[] {
  return readFileSync(path.join(dir, 'bridge.ndjson'), 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as { type: string; received_at: string; entry?: { message_id?: string } })
    .filter((r) => r.type === 'entry')
    .map((r) => ({ messageId: r.entry!.message_id!, receivedAt: Date.parse(r.received_at) }));
}

/** Records in the spool (what the consumer has made durable), by reading the file. */
export function spooled(dir: string): number {
  try {
    return readFileSync(`${dir}/bridge.ndjson`, 'utf8').split('\n').length - 1;
  } catch {
    return 0;
  }
}

async function call(hub: TestHub, token: string, method: string, p: string, body?: unknown): Promise<{ status: number; json: unknown }> {
  const res = await fetch(hub.url + p, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  return { status: res.status, json: (await res.json()) as unknown };
}

export async function directive(hub: TestHub, to: string, text: string): Promise<void> {
  const r = await call(hub, hub.humanToken, 'POST', '/v1/directives', { to, text });
  if (r.status !== 202) throw new Error(`directive → ${r.status} ${JSON.stringify(r.json)}`);
}

export const hubCall = call;

/**
 * Stop every background connection of an agent's state root (cleanup): those its entries
 * record, and one a run started just before it exited, which has not recorded itself yet.
 */
export async function stopConsumers(a: Agent): Promise<void> {
  const pids = new Set(processesMentioning(a.stateRoot));
  for (const loc of listStateDirs(a.stateRoot)) {
    const c = consumerOf(loc.dir);
    if (c) pids.add(c.pid);
  }
  for (const pid of pids) await killAndWait(pid);
}

/** The epilogue's first line for a real session, with the consumer's pid. */
export const leaseLine = (sessionId: string, pid: number): RegExp =>
  new RegExp(
    `^oh-hai bridge: lease — ${sessionId} expires \\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z \\(Hub's clock; last renewed \\d+s ago\\); consumer pid ${pid} on \\S+`,
    'm',
  );
