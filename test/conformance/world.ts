import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { collect, runOhHai, startOhHai, type RunResult } from '../helpers/cli.js';
import { tempEnv, type Party } from '../helpers/env.js';
import { killAndWait } from '../helpers/process.js';
import { waitFor } from '../helpers/wait.js';
import { startPeerHub, type MessageRec, type PeerHub, type PeerHubOptions, type SessionRec } from '../peer-hub/index.js';

/**
 * The conformance world: the peer Hub (written from MA2H.md alone) in this process, and
 * parties that run the real built CLI as processes, each with its own HOME and state root.
 * Everything started here is tracked and torn down by `teardown()`.
 */

export type { Party };

const hubs: PeerHub[] = [];
const parties: Party[] = [];
const children: ChildProcess[] = [];

export async function peerHub(opts: PeerHubOptions = {}): Promise<PeerHub> {
  const hub = await startPeerHub(opts);
  hubs.push(hub);
  return hub;
}

/** The knobs every CLI process gets, so the suite runs in seconds (docs/internals.md "Knobs"). */
const FAST: NodeJS.ProcessEnv = {
  OH_HAI_HEARTBEAT_MS: '100',
  OH_HAI_BACKOFF_MIN_MS: '10',
  OH_HAI_BACKOFF_MAX_MS: '50',
  OH_HAI_ASK_POLL_MS: '100',
  OH_HAI_CURSOR_POLL_MS: '100',
  // A backstop: a connection a failed test leaves behind stops on its own.
  OH_HAI_UNATTENDED_MAX_SECONDS: '60',
};

/**
 * A new agent at the peer Hub and a machine of its own. By default the credential is
 * OH_HAI_TOKEN (so the CLI learns its id from GET /v1/whoami); `tokens` uses
 * MA2H_AGENT_TOKENS instead.
 */
export function party(hub: PeerHub, label: string, opts: { env?: NodeJS.ProcessEnv; credential?: 'token' | 'tokens'; agentId?: string } = {}): Party {
  const a = hub.addAgent({ label, ...(opts.agentId !== undefined ? { id: opts.agentId } : {}) });
  const credential = opts.credential === 'tokens' ? { MA2H_AGENT_TOKENS: `${a.id}=${a.token}` } : { OH_HAI_TOKEN: a.token };
  const temp = tempEnv({ MA2H_HUB_URL: hub.url, ...credential, ...FAST, ...opts.env });
  const p: Party = { id: a.id, token: a.token, address: `agent:${a.id}`, temp, env: temp.env, stateRoot: temp.env.XDG_STATE_HOME! };
  parties.push(p);
  return p;
}

/** The same agent on another machine: same credential, its own HOME and state root (another `home`). */
export function twin(p: Party): Party {
  const temp = tempEnv();
  const env = { ...p.env, HOME: temp.env.HOME, XDG_STATE_HOME: temp.env.XDG_STATE_HOME, XDG_CONFIG_HOME: temp.env.XDG_CONFIG_HOME };
  const t: Party = { ...p, temp, env, stateRoot: env.XDG_STATE_HOME! };
  parties.push(t);
  return t;
}

/** Run the CLI as this party in agent session `session` (none declared when null). */
export function cli(p: Party, session: string | null, args: string[], opts: { env?: NodeJS.ProcessEnv; input?: string } = {}): Promise<RunResult> {
  const env = { ...p.env, ...(session !== null ? { MA2H_AGENT_SESSION_ID: session } : {}), ...opts.env };
  return runOhHai(args, { env, ...(opts.input !== undefined ? { input: opts.input } : {}), timeoutMs: 45_000 });
}

export const bridge = (p: Party, session: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<RunResult> =>
  cli(p, session, ['bridge', ...args], { env });

/** A bridge left running; `done` resolves when it exits. */
export function startBridge(p: Party, session: string, args: string[], env: NodeJS.ProcessEnv = {}): { child: ChildProcess; done: Promise<RunResult> } {
  const child = startOhHai(['bridge', ...args], { env: { ...p.env, MA2H_AGENT_SESSION_ID: session, ...env } });
  child.stdin?.end();
  children.push(child);
  return { child, done: collect(child, 45_000) };
}

interface ConsumerFile {
  dir: string;
  pid: number;
  state: string;
  transport: string | null;
  exit_code: number | null;
  stop_reason: string | null;
  stop_message: string | null;
}

/** Every consumer record under a party's state root (docs/internals.md "The state entry"). */
export function consumers(p: Party): ConsumerFile[] {
  const out: ConsumerFile[] = [];
  for (const leg of ['sessions', 'principal']) {
    const legDir = path.join(p.stateRoot, 'oh-hai', 'bridge', leg);
    if (!existsSync(legDir)) continue;
    for (const key of readdirSync(legDir)) {
      const dir = path.join(legDir, key);
      try {
        const c = JSON.parse(readFileSync(path.join(dir, 'consumer.json'), 'utf8')) as Omit<ConsumerFile, 'dir'>;
        out.push({ dir, pid: c.pid, state: c.state, transport: c.transport, exit_code: c.exit_code, stop_reason: c.stop_reason, stop_message: c.stop_message });
      } catch {
        // no record (yet) in this entry
      }
    }
  }
  return out;
}

/** Stop every background connection the party's state root recorded. */
export async function stopConsumers(p: Party): Promise<void> {
  for (const c of consumers(p)) await killAndWait(c.pid);
}

export async function teardown(): Promise<void> {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  for (const p of parties.splice(0)) {
    await stopConsumers(p);
    p.temp.cleanup();
  }
  for (const h of hubs.splice(0)) await h.close();
}

/** One HTTP call to the peer Hub, bearer in the header only. The body is loosely typed on purpose: tests assert on raw wire JSON. */
export async function call(hub: PeerHub, token: string | null, method: string, p: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(hub.url + p, {
    method,
    headers: { ...(token !== null ? { authorization: `Bearer ${token}` } : {}), 'content-type': 'application/json' },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, body: text === '' ? undefined : (JSON.parse(text) as unknown) };
}

export const enc = encodeURIComponent;

/** A human's directive to an address, through the wire. */
export async function directive(hub: PeerHub, to: string, text: string): Promise<string> {
  const r = await call(hub, hub.humanToken, 'POST', '/v1/directives', { to, text });
  if (r.status !== 202) throw new Error(`directive → ${r.status} ${JSON.stringify(r.body)}`);
  return (r.body as { message: { id: string } }).message.id;
}

/** A peer's message through the wire (as a raw client would send it). */
export async function sendAs(
  hub: PeerHub,
  from: Party,
  body: { to: string; intent: string; text: string; session?: string; in_reply_to?: string },
): Promise<string> {
  const r = await call(hub, from.token, 'POST', '/v1/messages', body);
  if (r.status !== 202) throw new Error(`send → ${r.status} ${JSON.stringify(r.body)}`);
  return (r.body as { message: { id: string } }).message.id;
}

export const sessionsOf = (hub: PeerHub, p: Party): SessionRec[] => [...hub.store.sessions.values()].filter((s) => s.agentId === p.id);

/** The party's active session with the given name once its connection holds a stream or has drained. */
export function live(hub: PeerHub, p: Party, name?: string): Promise<SessionRec> {
  return waitFor(
    () => sessionsOf(hub, p).find((s) => s.state === 'active' && (name === undefined || s.name === name) && (s.streams.size > 0 || s.seenAt !== null)),
    { what: `a live session of ${p.id}${name !== undefined ? ` named ${name}` : ''}` },
  );
}

/** The party's session once its connection holds an open stream on it. */
export const attached = (hub: PeerHub, p: Party): Promise<SessionRec> =>
  waitFor(() => sessionsOf(hub, p).find((s) => s.state === 'active' && s.streams.size > 0), { what: `an open stream of ${p.id}` });

/** Stream connects (2xx or not) the peer Hub saw for one session. */
export const streamConnects = (hub: PeerHub, sessionId: string) =>
  hub.requests.filter((r) => r.route === 'inbox.stream' && new URL(r.target, 'http://x').searchParams.get('session') === sessionId);

/** The stop line every fatal bridge exit prints (product doc). */
export const fatal = (code: number, name?: string): RegExp =>
  new RegExp(`^oh-hai bridge: FATAL \\(exit ${code}${name !== undefined ? `, ${name}` : ''}\\b`, 'm');

/** `--raw` output: one spool envelope per line. */
export function envelopes(
  stdout: string,
): { seq: number; type: string; session?: string; entry?: { [k: string]: string }; signature?: string; event?: string }[] {
  return stdout
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as { seq: number; type: string });
}

/**
 * Two agents on machines of their own, each with a registered bridge session ('A' and 'B')
 * that accepts asks from the account.
 */
export async function pair(opts: PeerHubOptions = {}): Promise<{ hub: PeerHub; a: Party; b: Party; aAddr: string; bAddr: string }> {
  const hub = await peerHub(opts);
  const a = party(hub, 'asker');
  const b = party(hub, 'answerer');
  for (const [p, name] of [
    [a, 'A'],
    [b, 'B'],
  ] as const) {
    const r = await bridge(p, name, ['--allow-from', 'any-in-account', '--wait', '0.5']);
    if (r.code !== 0) throw new Error(`bridge ${name} exited ${r.code}: ${r.stderr}`);
  }
  const sa = await live(hub, a, 'A');
  const sb = await live(hub, b, 'B');
  return { hub, a, b, aAddr: `agent:${a.id}#${sa.id}`, bAddr: `agent:${b.id}#${sb.id}` };
}

export const messageWith = (hub: PeerHub, text: string): MessageRec => [...hub.store.messages.values()].find((m) => m.text === text)!;

/** How the CLI shows an id or address: bare when printable ASCII, else JSON-quoted. */
export const shownId = (s: string): string => (/^[\x21-\x7e]+$/.test(s) ? s : JSON.stringify(s));

/** Wait until the peer Hub has the message's entry acknowledged (a reader read it). */
export const acknowledged = (hub: PeerHub, m: MessageRec): Promise<boolean> =>
  waitFor(() => hub.store.entry(m.entryId!)?.acknowledged === true, { what: `${m.id} acknowledged` });
