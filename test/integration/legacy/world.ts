import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { runOhHai, type RunResult } from '../../helpers/cli.js';
import { hubCall, type TestHub } from '../../helpers/hub.js';
import { waitFor } from '../../helpers/wait.js';
import { undoAfterEach, useHub } from '../../helpers/world.js';
import { agent, stateDirOf, QUICK_HUB, stopConsumers, type Agent } from '../bridge/world.js';

/**
 * A 0.9 per-directory home built the way 0.9 left one (docs/legacy-0.9.md): a session
 * registered at a real Hub under the 0.9 `home`, mail from a peer drained under that home
 * into a 0.9-format spool, the first `read` records acknowledged and the cursor on them.
 */

const here = path.dirname(fileURLToPath(import.meta.url));
export const SESSION_KEY = 'legacy-agent';

export interface Sent {
  messageId: string;
  entryId: string;
  text: string;
}

export interface LegacyWorld {
  hub: TestHub;
  me: Agent;
  peer: { id: string; token: string };
  /** The working directory the 0.9 home served, where the test runs oh-hai. */
  work: string;
  /** <work>/.oh-hai/bridge */
  dir: string;
  home: string;
  session: { id: string; address: string };
  sent: Sent[];
  /** This agent session's state directory. */
  stateDir: string;
  spoolText: string;
  connection: ChildProcess | null;
}

export interface LegacyOptions {
  count: number;
  read: number;
  /** A short lease, for a session that is to lapse. */
  leaseSeconds?: number;
  /** Run a 0.9 connection stand-in and write its pid to consumer.pid. */
  connection?: 'stream' | 'idle' | 'stubborn';
}

export async function send(w: Pick<LegacyWorld, 'hub' | 'peer' | 'session'>, text: string): Promise<string> {
  const r = await hubCall(w.hub, 'POST', '/v1/messages', { token: w.peer.token, body: { to: w.session.address, intent: 'notify', text } });
  if (r.status !== 202) throw new Error(`send → ${r.status} ${r.text}`);
  return (r.body as { message: { id: string } }).message.id;
}

export async function legacyWorld(hub: TestHub, opts: LegacyOptions): Promise<LegacyWorld> {
  const me = await agent(hub, { MA2H_AGENT_SESSION_ID: SESSION_KEY });
  const peer = await hub.mintAgent('legacy-peer');
  const work = path.join(me.temp.root, 'work', 'project');
  const dir = path.join(work, '.oh-hai', 'bridge');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const home = `legacy09-${randomBytes(8).toString('hex')}`;
  const consumerHeader = { 'ma2h-consumer': `home=${home}; host=legacy-host; pid=${process.pid}` };

  const reg = await hubCall(hub, 'POST', '/v1/sessions', {
    token: me.token,
    body: {
      client_key: `dir-${randomBytes(6).toString('hex')}`,
      name: 'legacy-dir',
      home,
      host: 'legacy-host',
      pid: process.pid,
      ...(opts.leaseSeconds !== undefined ? { lease_seconds: opts.leaseSeconds } : {}),
    },
  });
  if (reg.status !== 201) throw new Error(`register → ${reg.status} ${reg.text}`);
  const session = reg.body.session as { id: string; address: string };
  const world = { hub, peer, session };

  const sent: Sent[] = [];
  for (let i = 1; i <= opts.count; i++) {
    const text = `legacy mail ${i} ${randomBytes(4).toString('hex')}`;
    sent.push({ messageId: await send(world, text), entryId: '', text });
  }
  const drained = await hubCall(hub, 'GET', `/v1/inbox?session=${session.id}`, { token: me.token, headers: consumerHeader });
  const deliveries = drained.body.messages as { entry: { id: string; message_id: string }; signature: string }[];
  if (deliveries.length !== opts.count) throw new Error(`drained ${deliveries.length} of ${opts.count}: ${drained.text}`);
  // In the order the Hub delivered them, which is the spool's order.
  const inOrder = deliveries.map((d) => {
    const s = sent.find((m) => m.messageId === d.entry.message_id);
    if (!s) throw new Error(`a delivery for a message this test did not send: ${JSON.stringify(d.entry)}`);
    return { ...s, entryId: d.entry.id };
  });
  const spoolText = deliveries
    .map((d, i) => JSON.stringify({ seq: i + 1, received_at: new Date().toISOString(), session: session.id, entry: d.entry, signature: d.signature }) + '\n')
    .join('');
  writeFileSync(path.join(dir, 'bridge.ndjson'), spoolText, { mode: 0o600 });
  const ids = deliveries.map((d) => d.entry.id);
  const ack = await hubCall(hub, 'POST', '/v1/inbox/ack', {
    token: me.token,
    body: { session: session.id, delivered: ids, acknowledged: ids.slice(0, opts.read) },
  });
  if (ack.status !== 200) throw new Error(`ack → ${ack.status} ${ack.text}`);
  writeFileSync(path.join(dir, 'cursor'), `${opts.read}\n`, { mode: 0o600 });
  writeFileSync(
    path.join(dir, 'session.json'),
    JSON.stringify({ id: session.id, address: session.address, name: 'legacy-dir', hub: hub.url, agent_id: me.id, home }),
    { mode: 0o600 },
  );

  let connection: ChildProcess | null = null;
  if (opts.connection) {
    connection = spawn(process.execPath, [path.join(here, 'oh-hai-0.9-connection.mjs'), hub.url, session.id, home, opts.connection], {
      env: { PATH: process.env.PATH, LEGACY_TOKEN: me.token },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    connection.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
    connection.stderr!.setEncoding('utf8').on('data', (d: string) => (out += d));
    await waitFor(() => out.includes('ready') || connection!.exitCode !== null, { what: 'the 0.9 connection stand-in to hold its session' });
    if (!out.includes('ready')) throw new Error(`the 0.9 connection stand-in failed: ${out}`);
    writeFileSync(path.join(dir, 'consumer.pid'), `${connection.pid}\n`, { mode: 0o600 });
  }

  return { hub, me, peer, work, dir, home, session, sent: inOrder, stateDir: stateDirOf(me, hub, SESSION_KEY), spoolText, connection };
}

/**
 * A legacy test file's world: one quick Hub, and the 0.9 homes each test builds on it,
 * undone after the test (the 0.9 stand-in killed, our connections stopped, the HOME removed).
 */
export function useLegacyWorlds(): { world(opts: LegacyOptions): Promise<LegacyWorld> } {
  const hub = useHub(QUICK_HUB);
  const keep = undoAfterEach(async (w: LegacyWorld) => {
    w.connection?.kill('SIGKILL');
    await stopConsumers(w.me);
    w.me.temp.cleanup();
  });
  return { world: async (opts) => keep(await legacyWorld(hub.hub, opts)) };
}

/** `oh-hai bridge` run in the 0.9 home's working directory, as this agent session (or another). */
export const bridgeIn = (w: LegacyWorld, args: string[], env: NodeJS.ProcessEnv = {}): Promise<RunResult> =>
  runOhHai(['bridge', ...args], { env: { ...w.me.env, ...env }, cwd: w.work });

export async function sessionState(w: LegacyWorld, id: string): Promise<{ state: string; holder: { pid: number; home: string } | null }> {
  const r = await hubCall(w.hub, 'GET', `/v1/sessions/${id}`, { token: w.me.token });
  return r.body.session as { state: string; holder: { pid: number; home: string } | null };
}

export async function waitLapsed(w: LegacyWorld): Promise<void> {
  await waitFor(async () => (await sessionState(w, w.session.id)).state === 'lapsed', { what: `${w.session.id} to lapse` });
}

/** Every file of the 0.9 home, by name, with its bytes. */
export const snapshot = (dir: string): Record<string, string> => Object.fromEntries(readdirSync(dir).map((n) => [n, readFileSync(path.join(dir, n), 'utf8')]));

export const entryIdsIn = (spool: string): string[] =>
  spool
    .split('\n')
    .filter((l) => l !== '')
    .flatMap((l) => {
      const r = JSON.parse(l) as { type: string; entry?: { id: string } };
      return r.type === 'entry' && r.entry ? [r.entry.id] : [];
    });

export function readSpool(stateDir: string): string {
  try {
    return readFileSync(path.join(stateDir, 'bridge.ndjson'), 'utf8');
  } catch {
    return '';
  }
}

export async function messageState(w: LegacyWorld, messageId: string): Promise<string> {
  const r = await hubCall(w.hub, 'GET', `/v1/messages/${messageId}`, { token: w.peer.token });
  return (r.body as { message: { state: string } }).message.state;
}
