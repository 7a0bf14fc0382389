import {
  ANY_IN_ACCOUNT,
  isDefaultRetainPrinted,
  isPolicyName,
  loadConfigFiles,
  rememberAgentId,
  requireHubUrl,
  resolveAgentCredential,
  resolveSettings,
  type AgentCredential,
  type ResolvedSettings,
  type SettingsFlags,
} from '../../config/index.js';
import { type Coded, EXIT, type CodedError, knobFromEnv } from '../../core/index.js';
import type { AgentRow } from '../../hub/contract/index.js';
import {
  openStateDir,
  resolveStateRoot,
  sessionStateDir,
  stateKey,
  type ConsumerSettings,
  type IdentityRecord,
  type StateDir,
  type StateDirOpenFailure,
} from '../../spool/index.js';
import type { CliIO } from '../io.js';
import type { ProcessInspector } from './host-program.js';
import { resolveAllowFrom } from './allow-from.js';
import { adoptLegacyHomeOnce } from './legacy-hook.js';
import { pinCandidate, resolveAgentSessionKey, type AgentSessionKey } from './session-key.js';

/**
 * Bridge-style resolution: flags → config → credential → agent id (`resolveAgent`, which
 * every command acting as this agent uses, the sending side included) → agent-session key
 * → state dir (`resolveBridge`: `oh-hai bridge`, `__consumer --mode direct`, `doctor`), in
 * that order. A failure before the entry resolves carries its reason and nothing else: the
 * lease epilogue is armed only by success.
 */

export interface ResolveFlags extends SettingsFlags {
  session?: string;
  stateHome?: string;
  agent?: string;
}

export interface AgentRequest {
  flags: ResolveFlags;
  io: Pick<CliIO, 'env' | 'cwd' | 'clock'>;
  /** Learns the agent id of a bare OH_HAI_TOKEN; the default lazily loads the Hub client. */
  whoami?: (hubUrl: string, token: string) => Promise<Coded<string>>;
  /** Reads the agent directory for an --allow-from label the cache cannot answer; the default lazily loads the Hub client. */
  directory?: (who: DirectoryWho, nowIso: string) => Promise<Coded<AgentRow[]>>;
}

export interface ResolveRequest extends AgentRequest {
  io: Pick<CliIO, 'env' | 'cwd' | 'clock' | 'pid'>;
  /** Make the entry when it does not exist (the bridge); read-only callers pass false. */
  create: boolean;
  host: string;
  inspect: ProcessInspector;
}

/** Who talks to which Hub, and with what settings. */
export interface ResolvedAgent {
  stateRoot: string;
  hubUrl: string;
  settings: ResolvedSettings;
  credential: AgentCredential;
  agentId: string;
  /** Lines for stderr: config warnings, credential warnings. */
  warnings: string[];
}

export interface ResolvedBridge extends ResolvedAgent {
  sessionKey: AgentSessionKey;
  key: string;
  stateDir: StateDir;
  /** Lines for stderr: config and credential warnings, permission repairs, an adopted 0.9 home. */
  warnings: string[];
}

const usage = (code: string, message: string): { ok: false; error: CodedError } => ({ ok: false, error: { code, message, exit: EXIT.usage } });

/** Flags → config → credential → agent id: everything a command acting as this agent needs. */
export async function resolveAgent(req: AgentRequest): Promise<Coded<ResolvedAgent>> {
  const { flags, io } = req;

  const root = resolveStateRoot({ stateHome: flags.stateHome, env: io.env });
  if (!root.ok) return usage('bad_state_home', root.reason);

  const loaded = loadConfigFiles({ env: io.env, cwd: io.cwd });
  if (!loaded.ok) return loaded;
  // A label in --allow-from is resolved against this agent's directory, so the policy can be
  // parsed only once the agent id is known: until then a placeholder stands in for it (this
  // pass learns the Hub and the credential), and the settings are resolved again below.
  const labelled = (flags.allowFrom ?? []).some(isPolicyName);
  let settings = resolveSettings({ flags: labelled ? { ...flags, allowFrom: [ANY_IN_ACCOUNT] } : flags, env: io.env, loaded: loaded.value });
  if (!settings.ok) return settings;
  const hubUrl = requireHubUrl(settings.value);
  if (!hubUrl.ok) return hubUrl;

  const cred = resolveAgentCredential({ env: io.env, hubUrl: hubUrl.value, agent: flags.agent, stateRoot: root.value });
  if (!cred.ok) return cred;

  let agentId = cred.value.agentId;
  if (agentId === null) {
    const learned = await (req.whoami ?? whoamiOverHttp)(hubUrl.value, cred.value.token);
    if (!learned.ok) return learned;
    agentId = learned.value;
    await rememberAgentId({ stateRoot: root.value, hubUrl: hubUrl.value, token: cred.value.token, agentId });
  }
  const named: string[] = [];
  if (labelled) {
    const who: DirectoryWho = { stateRoot: root.value, hubUrl: hubUrl.value, credential: cred.value, agentId };
    const nowIso = new Date(io.clock.now()).toISOString();
    const resolved = await resolveAllowFrom(flags.allowFrom ?? [], who, () => (req.directory ?? directoryOverHttp)(who, nowIso));
    if (!resolved.ok) return resolved;
    settings = resolveSettings({ flags: { ...flags, allowFrom: resolved.value.items }, env: io.env, loaded: loaded.value });
    if (!settings.ok) return settings;
    named.push(...resolved.value.lines);
  }
  return {
    ok: true,
    value: {
      stateRoot: root.value,
      hubUrl: hubUrl.value,
      settings: settings.value,
      credential: cred.value,
      agentId,
      warnings: [...settings.value.warnings, ...cred.value.warnings, ...named],
    },
  };
}

/**
 * A state entry that cannot be opened. No entry (read-only callers) is "nothing here for this
 * agent session"; a record that is a directory is `state_unreadable`, 1, as every state file
 * that is not a regular file is (docs/consumer.md); the rest is the environment, not a bug.
 */
export function stateEntryError(f: StateDirOpenFailure): CodedError {
  if (f.code === 'not_a_file') return { code: 'state_unreadable', message: f.reason, exit: EXIT.internal };
  return { code: `state_entry_${f.code}`, message: f.reason, exit: f.code === 'absent' ? EXIT.noSession : EXIT.usage };
}

/** `resolveAgent`, then this agent session's key and its state dir (made with `create`). */
export async function resolveBridge(req: ResolveRequest): Promise<Coded<ResolvedBridge>> {
  const { flags, io } = req;
  const resolved = await resolveAgent(req);
  if (!resolved.ok) return resolved;
  const agent = resolved.value;
  const { stateRoot, hubUrl, credential, agentId } = agent;

  const sessionKey = resolveAgentSessionKey({ flag: flags.session, env: io.env, host: req.host, selfPid: io.pid, inspect: req.inspect });
  if (!sessionKey.ok) return usage('agent_session_unknown', sessionKey.reason);

  const key = stateKey(hubUrl, agentId, sessionKey.value.key);
  const dir = sessionStateDir(stateRoot, key);
  const logBound = knobFromEnv(io.env, 'logMaxBytes');
  if (!logBound.ok) return logBound;
  const opened = openStateDir(dir, { create: req.create, log: { clock: io.clock, pid: io.pid, deny: [credential.token], maxBytes: logBound.value } });
  if (!opened.ok) return { ok: false, error: stateEntryError(opened) };
  const stateDir = opened.value;
  let adopted: string[] = [];
  if (req.create) {
    recordIdentity(stateDir, { hub: hubUrl, agent_id: agentId, session: sessionKey.value });
    const legacy = await adoptLegacyHomeOnce({ stateDir, io, hubUrl, token: credential.token, agentId, pinned: sessionKey.value.pinned });
    if (!legacy.ok) return legacy;
    adopted = legacy.value;
  }

  return {
    ok: true,
    value: {
      ...agent,
      sessionKey: sessionKey.value,
      key,
      stateDir,
      warnings: [...agent.warnings, ...stateDir.repairs.map((r) => `tightened permissions on ${r.path} from ${r.was} to ${r.now}`), ...adopted],
    },
  };
}

/**
 * What a connection runs with (its settings.json): this agent session's, or with
 * `principal` the identity's principal mailbox (`oh-hai inbox watch`), which has no session
 * and no stream — it is drained by long-poll. `agent` is the --agent pick among several tokens.
 */
export function connectionSettings(r: ResolvedAgent, target: AgentSessionKey | 'principal', agent: string | null): ConsumerSettings {
  const b = r.settings.bridge;
  const common = {
    hub: r.hubUrl,
    agent_id: r.agentId,
    interval_seconds: b.intervalSeconds,
    max_retries: b.maxRetries,
    unattended_max_seconds: b.unattendedMaxSeconds,
    allow_from: b.allowFrom,
    agent,
    // Absent means the default, so a settings.json stays as it was for everyone who never set it.
    ...(isDefaultRetainPrinted(b.retainPrinted) ? {} : { retain_printed: { ...b.retainPrinted } }),
  };
  if (target === 'principal') return { ...common, session_key: 'principal', pinned: null, name: null, transport: 'poll', leg: 'principal' };
  return {
    ...common,
    session_key: target.key,
    pinned: target.pinned,
    name: target.name,
    pin_candidate: pinCandidate(target),
    transport: b.transport,
    leg: 'session',
  };
}

/** identity.json says whose entry this is, for doctor and fleet; rewritten only when it differs. */
function recordIdentity(stateDir: StateDir, who: { hub: string; agent_id: string; session: AgentSessionKey }): void {
  const want: IdentityRecord = {
    hub: who.hub,
    agent_id: who.agent_id,
    session_key: who.session.key,
    key_source: who.session.source,
    pinned: who.session.pinned,
    name: who.session.name,
  };
  const have = stateDir.read('identity');
  if (have.state === 'ok' && JSON.stringify(have.value) === JSON.stringify(want)) return;
  stateDir.write('identity', want);
}

/** Whose directory an --allow-from label is looked up in, and with which credential. */
export type DirectoryWho = Pick<ResolvedAgent, 'stateRoot' | 'hubUrl' | 'credential' | 'agentId'>;

/** The directory read as `send --to <label>` reads it (and the cache refreshed), loaded only on a cache miss. */
async function directoryOverHttp(who: DirectoryWho, nowIso: string): Promise<Coded<AgentRow[]>> {
  const [{ HubClient }, { fetchAgentDirectory }] = await Promise.all([import('../../hub/client/index.js'), import('../messaging/directory.js')]);
  const client = new HubClient({ baseUrl: who.hubUrl, token: who.credential.token, userAgent: 'oh-hai' });
  return fetchAgentDirectory({ ...who, client }, nowIso, 'looking up --allow-from in the agent directory');
}

/** GET /v1/whoami, loaded only on this cold path so the warm path never imports the network stack. */
async function whoamiOverHttp(hubUrl: string, token: string): Promise<Coded<string>> {
  const { HubClient, CHECK_HUB_URL, noSuchEndpoint } = await import('../../hub/client/index.js');
  const res = await new HubClient({ baseUrl: hubUrl, token }).whoami();
  if (res.ok) {
    if (res.value.kind === 'agent') return { ok: true, value: res.value.agent.id };
    return {
      ok: false,
      error: {
        code: 'not_an_agent_token',
        exit: EXIT.auth,
        message: `the token in OH_HAI_TOKEN is the account's human token; the bridge needs an agent token (mint one in the Hub, then export OH_HAI_TOKEN=<agent token>)`,
      },
    };
  }
  const f = res.failure;
  if (f.kind === 'http' && (f.status === 401 || f.code === 'messaging_disabled')) {
    return {
      ok: false,
      error: {
        code: f.code,
        exit: EXIT.auth,
        message: `${hubUrl} refused the credential in OH_HAI_TOKEN (${f.status} ${f.code}: ${f.message}); a human must fix the credential`,
      },
    };
  }
  // A network failure's message names its request already (`GET /v1/whoami: connect …`).
  const what = f.kind === 'network' ? f.message : `GET /v1/whoami: ${f.kind === 'http' ? `${f.status} ${f.code}: ` : ''}${f.message}`;
  return {
    ok: false,
    error: {
      code: 'hub_unreachable',
      exit: EXIT.unreachable,
      message: `could not learn this token's agent id from ${hubUrl} (${what}); ${noSuchEndpoint(f) ? `${CHECK_HUB_URL} — re-running will not help` : 're-run with your own backoff'}`,
    },
  };
}
