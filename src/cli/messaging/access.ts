import type { SettingsFlags } from '../../config/index.js';
import { type Coded, CONNECTION_KNOBS, done, EXIT, readKnobs, toOutcome, type Outcome } from '../../core/index.js';
import { formatAddress } from '../../hub/contract/index.js';
import { HubClient } from '../../hub/client/index.js';
import {
  STATE_FILES,
  hostName,
  openStateDir,
  parseSessionRecord,
  spooledPastStoodDown,
  principalStateDir,
  readRecord,
  sessionStateDir,
  spooledSession,
  stateKey,
  type StateDir,
} from '../../spool/index.js';
import type { CliIO } from '../io.js';
import {
  processInspector,
  resolveAgent,
  resolveAgentSessionKey,
  stateEntryError,
  type AgentSessionKey,
  type ProcessInspector,
  type ResolvedAgent,
} from '../resolve/index.js';
import { hubFailureError } from './failures.js';

/** The flags every command that talks to the Hub as this agent takes (plus the bridge settings `inbox watch` names). */
/** The intervals of the sending side (the knob registry); production never sets them. */
export interface MessagingKnobs {
  /** `oh-hai ask --wait` polls GET /v1/messages/:id this often (2 s, as MCP's oh_hai_ask does). */
  askPollMs: number;
  /** `oh-hai session close` waits this long for the connection's clean stop after SIGTERM. */
  stopWaitMs: number;
  backoffMinMs: number;
  backoffMaxMs: number;
  staleHolderSeconds: number;
}

export function readMessagingKnobs(env: NodeJS.ProcessEnv): Coded<MessagingKnobs> {
  const k = readKnobs(env, [...CONNECTION_KNOBS, 'askPollMs', 'stopWaitMs']);
  if (!k.ok) return k;
  const { askPollMs, stopWaitMs, backoffMinMs, backoffMaxMs, staleHolderSeconds } = k.value;
  return { ok: true, value: { askPollMs, stopWaitMs, backoffMinMs, backoffMaxMs, staleHolderSeconds } };
}

export interface AgentFlags extends Omit<SettingsFlags, 'transport' | 'unattendedMaxSeconds'> {
  hub?: string;
  agent?: string;
  session?: string;
  stateHome?: string;
}

/**
 * The Hub session this agent session currently holds, as its state dir records it — or
 * why there is none. A send attaches it so that a reply reaches the run that is reading.
 */
export type ThisSession =
  | { kind: 'attached'; id: string; address: string; stateDirPath: string | null; key: AgentSessionKey }
  | { kind: 'none'; why: string; stateDirPath: string | null; key: AgentSessionKey | null };

/** The bridge's resolution of this agent (`resolveAgent`), a Hub client acting as it, and this agent session read-only. */
export interface AgentAccess extends ResolvedAgent {
  client: HubClient;
  principalAddress: string;
  thisSession: ThisSession;
}

/**
 * The principal leg's state dir of an identity (`oh-hai inbox watch`): one per Hub and
 * agent on this machine. The key's third part is a constant, in its own directory
 * (…/bridge/principal/), so no agent-session key can collide with it.
 */
export const principalStateDirFor = (root: string, hubUrl: string, agentId: string): string => principalStateDir(root, stateKey(hubUrl, agentId, 'principal'));

/**
 * Hub URL, credential and agent id as the bridge resolves them, then this agent session's
 * entry read-only — never created: a send must not leave state behind. An agent session
 * the CLI cannot determine is not an error here; the send goes without a session.
 */
export async function resolveAgentAccess(flags: AgentFlags, io: CliIO, inspect: ProcessInspector = processInspector): Promise<Coded<AgentAccess>> {
  const resolved = await resolveAgent({ flags, io, whoami });
  if (!resolved.ok) return resolved;
  const r = resolved.value;
  return {
    ok: true,
    value: {
      ...r,
      client: new HubClient({ baseUrl: r.hubUrl, token: r.credential.token, userAgent: 'oh-hai' }),
      principalAddress: formatAddress(r.agentId),
      thisSession: findThisSession({ flags, io, inspect, root: r.stateRoot, hubUrl: r.hubUrl, agentId: r.agentId }),
    },
  };
}

/**
 * Run `body` as this agent: resolve access, say its warnings under the command's name, and
 * release the Hub client whatever the body returns.
 */
export async function withAgentAccess(command: string, flags: AgentFlags, io: CliIO, body: (a: AgentAccess) => Promise<Outcome>): Promise<Outcome> {
  const access = await resolveAgentAccess(flags, io);
  if (!access.ok) return toOutcome(access.error);
  const a = access.value;
  try {
    for (const w of a.warnings) io.stderr.write(`${command}: ${w}\n`);
    return await body(a);
  } finally {
    await a.client.close();
  }
}

/** The resolution's whoami hook, saying a refusal in the sending side's words (hubFailureError). Only a bare OH_HAI_TOKEN needs it. */
async function whoami(hubUrl: string, token: string): Promise<Coded<string>> {
  const client = new HubClient({ baseUrl: hubUrl, token, userAgent: 'oh-hai' });
  try {
    const who = await client.whoami();
    if (!who.ok)
      return {
        ok: false,
        error: hubFailureError(who.failure, { hubUrl, credential: 'OH_HAI_TOKEN', doing: 'learning the agent id of this token', request: 'GET /v1/whoami' }),
      };
    if (who.value.kind === 'agent') return { ok: true, value: who.value.agent.id };
    return {
      ok: false,
      error: {
        code: 'not_an_agent_token',
        exit: EXIT.auth,
        message: `the OH_HAI_TOKEN token is the account's human token; messaging needs an agent token (mint one, then export OH_HAI_TOKEN=<agent token>)`,
      },
    };
  } finally {
    await client.close();
  }
}

function findThisSession(p: { flags: AgentFlags; io: CliIO; inspect: ProcessInspector; root: string; hubUrl: string; agentId: string }): ThisSession {
  const key = resolveAgentSessionKey({ flag: p.flags.session, env: p.io.env, host: hostName(), selfPid: p.io.pid, inspect: p.inspect });
  if (!key.ok) return { kind: 'none', why: `the CLI could not tell which agent session this is (${key.reason})`, stateDirPath: null, key: null };
  const stateDirPath = sessionStateDir(p.root, stateKey(p.hubUrl, p.agentId, key.value.key));
  const record = readRecord(stateDirPath, STATE_FILES.session, parseSessionRecord);
  const attached = (s: { id: string; address: string }): ThisSession => ({ kind: 'attached', id: s.id, address: s.address, stateDirPath, key: key.value });
  // Unpinned, the session is where the spool leads from the recorded one (or the last stood
  // down), as the next connection finds it: one stopped after spooling an address change and
  // before recording the session it names left session.json a step behind.
  const pinned = key.value.pinned;
  if (record.state === 'ok') {
    const spooled = pinned === null && !record.value.pinned ? spooledSession(stateDirPath, record.value.id) : null;
    return attached(spooled ?? record.value);
  }
  // A pinned key names its Hub session outright, bridge or no bridge.
  if (pinned !== null) return attached({ id: pinned, address: formatAddress(p.agentId, pinned) });
  const spooled = record.state === 'absent' ? spooledPastStoodDown(stateDirPath) : null;
  if (spooled !== null) return attached(spooled.to);
  const why =
    record.state === 'absent'
      ? `this agent session (${key.value.describe}) holds no session: no oh-hai bridge has registered one here, or it was stood down`
      : `this agent session's session record could not be read (${record.reason})`;
  return { kind: 'none', why, stateDirPath, key: key.value };
}

/**
 * This agent session's state entry, for a command that reads it or stands it down: null when
 * there is none here. An entry the open refuses (a directory where a record belongs, another
 * user's) is that refusal, as the bridge gives it, naming the path and the fix: "no entry"
 * would send the user to a bridge run that refuses the same way.
 */
export function openThisEntry(stateDirPath: string | null): Coded<StateDir | null> {
  if (stateDirPath === null) return done(null);
  const opened = openStateDir(stateDirPath, { create: false });
  if (opened.ok) return done(opened.value);
  return opened.code === 'absent' ? done(null) : { ok: false, error: stateEntryError(opened) };
}
