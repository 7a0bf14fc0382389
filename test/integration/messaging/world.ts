import { readFileSync } from 'node:fs';
import path from 'node:path';
import { listStateDirs, parseConsumerRecord, readRecord, sessionStateDir, stateKey, parseSessionRecord, type SessionRecord } from '../../../src/spool/index.js';
import { runOhHai, startOhHai, type RunResult } from '../../helpers/cli.js';
import { tempEnv, type Party } from '../../helpers/env.js';
import { afterAll, beforeAll } from 'vitest';
import type { StartHubOptions, TestHub } from '../../helpers/hub.js';
import { killAndWait } from '../../helpers/process.js';
import { waitFor } from '../../helpers/wait.js';
import { useHub } from '../../helpers/world.js';

/** A party here talks to a real Hub through the real CLI. */
export type { Party };

/** A spool envelope as `oh-hai bridge --raw` prints it. */
export interface Envelope {
  seq: number;
  type: 'entry' | 'transition';
  session?: string;
  entry?: {
    id: string;
    kind: string;
    from: string;
    to: string;
    intent?: string;
    text?: string;
    message_id?: string;
    in_reply_to?: string;
    status?: string;
    prior?: string;
  };
}

export async function party(hub: TestHub, label: string, env: NodeJS.ProcessEnv = {}): Promise<Party> {
  const agent = await hub.mintAgent(label);
  const temp = tempEnv({
    MA2H_HUB_URL: hub.url,
    OH_HAI_TOKEN: agent.token,
    OH_HAI_HEARTBEAT_MS: '200',
    OH_HAI_ASK_POLL_MS: '100',
    OH_HAI_BACKOFF_MIN_MS: '20',
    OH_HAI_BACKOFF_MAX_MS: '100',
    // A backstop: a consumer a failed test leaves behind stops on its own.
    OH_HAI_UNATTENDED_MAX_SECONDS: '120',
    ...env,
  });
  return { id: agent.id, token: agent.token, address: `agent:${agent.id}`, temp, env: temp.env, stateRoot: temp.env.XDG_STATE_HOME! };
}

/** A messaging test's world: the Hub, and each party by its label. */
export type Parties<L extends string> = { readonly hub: TestHub } & { readonly [K in L]: Party };

/**
 * One real Hub for every test of the scope, and an agent per label, each on a machine of
 * its own (minted with the label as its name). After the last test the parties'
 * connections are stopped and their HOMEs removed, then the Hub is disposed.
 */
export function useParties<L extends string>(labels: readonly L[], opts: StartHubOptions = {}): Parties<L> {
  const world = useHub(opts);
  const made = new Map<L, Party>();
  beforeAll(async () => {
    for (const label of labels) made.set(label, await party(world.hub, label));
  });
  afterAll(async () => {
    for (const p of made.values()) await stopAll(p);
    for (const p of made.values()) p.temp.cleanup();
    made.clear();
  });
  const parties = {
    get hub() {
      return world.hub;
    },
  };
  for (const label of labels) {
    Object.defineProperty(parties, label, {
      get: (): Party => {
        const p = made.get(label);
        if (p === undefined) throw new Error(`party ${label} is made in beforeAll: read it inside a test or a hook`);
        return p;
      },
    });
  }
  return parties as Parties<L>;
}

/** Run the CLI as this party, in the agent session `session` (or none declared when null). */
export function as(p: Party, session: string | null, args: string[], opts: { input?: string; env?: NodeJS.ProcessEnv } = {}): Promise<RunResult> {
  const env = { ...p.env, ...(session !== null ? { MA2H_AGENT_SESSION_ID: session } : {}), ...opts.env };
  return runOhHai(args, { env, input: opts.input });
}

export const BRIDGE = ['bridge', '--allow-from', 'any-in-account'];

export function startBridge(p: Party, session: string, wait: number) {
  return startOhHai([...BRIDGE, '--wait', String(wait)], { env: { ...p.env, MA2H_AGENT_SESSION_ID: session } });
}

export function stateDirOf(p: Party, hub: TestHub, session: string): string {
  return sessionStateDir(p.stateRoot, stateKey(hub.url, p.id, session));
}

export function sessionOf(p: Party, hub: TestHub, session: string): SessionRecord | null {
  const r = readRecord(stateDirOf(p, hub, session), 'session.json', parseSessionRecord);
  return r.state === 'ok' ? r.value : null;
}

/** Run the bridge once so that its background connection registers the session; returns the session record. */
export async function register(p: Party, hub: TestHub, session: string): Promise<SessionRecord> {
  const r = await as(p, session, [...BRIDGE, '--wait', '0.2']);
  if (r.code !== 0) throw new Error(`bridge for ${session} exited ${r.code}: ${r.stderr}`);
  try {
    return await waitFor(() => sessionOf(p, hub, session), { what: `the session record of ${session}` });
  } catch (e) {
    let log = '(no bridge.log)';
    try {
      log = readFileSync(file(stateDirOf(p, hub, session), 'bridge.log'), 'utf8');
    } catch {
      // the entry never got a log: the message says so
    }
    throw new Error(`${(e as Error).message}\nbridge stderr: ${r.stderr}\nbridge.log:\n${log}`);
  }
}

/**
 * Run `oh-hai bridge --raw` again and again (each run prints what is waiting and exits)
 * until the envelopes printed so far satisfy `done`.
 */
export async function readUntil(p: Party, session: string, done: (seen: Envelope[]) => boolean, what: string): Promise<Envelope[]> {
  const seen: Envelope[] = [];
  await waitFor(
    async () => {
      const r = await as(p, session, [...BRIDGE, '--raw', '--wait', '1']);
      if (r.code !== 0) throw new Error(`bridge exited ${r.code}: ${r.stderr}`);
      for (const line of r.stdout.split('\n').filter((l) => l !== '')) seen.push(JSON.parse(line) as Envelope);
      return done(seen);
    },
    { timeoutMs: 40_000, what },
  );
  return seen;
}

export const entriesOf = (seen: Envelope[]) => seen.flatMap((e) => (e.type === 'entry' && e.entry ? [e.entry] : []));

/** The pid of the background connection an entry recorded, if it recorded one. */
export function consumerPid(dir: string): number | null {
  const r = readRecord(dir, 'consumer.json', parseConsumerRecord);
  return r.state === 'ok' ? r.value.pid : null;
}

/** Stop every background connection a party's state root recorded (test cleanup). */
export async function stopAll(p: Party): Promise<void> {
  for (const loc of listStateDirs(p.stateRoot)) {
    const pid = consumerPid(loc.dir);
    if (pid !== null) await killAndWait(pid);
  }
}

export const file = (dir: string, name: string): string => path.join(dir, name);
