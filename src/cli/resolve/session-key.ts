import { isSessionId, validateId, validateSessionName } from '../../hub/contract/ids.js';
import { fail, ok, type Result } from '../../core/index.js';
import { sha256Hex } from '../../util/sha256.js';
import { findHostProgram, type ProcessInspector } from './host-program.js';

/**
 * The agent-session key (DESIGN.md "Agent-session key"): --session > MA2H_SESSION_ID >
 * MA2H_AGENT_SESSION_ID > CLAUDE_CODE_SESSION_ID > the long-lived program hosting the
 * agent. From --session or MA2H_SESSION_ID, a `sess_…` value, or a valid MA2H id that is
 * no session name, can only be a Hub session id and pins it. Any other value is a name the
 * mailbox is registered under; from those two sources it is also a pin candidate
 * (`pinCandidate`): ids are opaque (MA2H §0), so the connection asks the Hub whether it is
 * one of this agent's sessions before registering under it (docs/bridge.md "Resolution").
 */

export type KeySource = '--session' | 'MA2H_SESSION_ID' | 'MA2H_AGENT_SESSION_ID' | 'CLAUDE_CODE_SESSION_ID' | 'host program';

export interface AgentSessionKey {
  /** What the state key hashes: the declared value, or `host:<host>:<pid>:<start>`. */
  key: string;
  source: KeySource;
  /** The Hub session this key pins, or null. */
  pinned: string | null;
  /** The session name registered at the Hub (unpinned), or null when pinned. */
  name: string | null;
  /** The key was declared (flag or variable), not inferred from the host program. */
  declared: boolean;
  /** For messages: where the key came from, e.g. `--session builder-1` or `claude pid 4100`. */
  describe: string;
}

const DECLARED: readonly { source: Exclude<KeySource, 'host program' | '--session'>; pins: boolean }[] = [
  { source: 'MA2H_SESSION_ID', pins: true },
  { source: 'MA2H_AGENT_SESSION_ID', pins: false },
  { source: 'CLAUDE_CODE_SESSION_ID', pins: false },
];

/** Ids are opaque: a declared value that is no session name but is a valid MA2H id can only be an id. */
const pinsOutright = (v: string): boolean => isSessionId(v) || (!validateSessionName(v).ok && validateId(v, 'session id').ok);

/**
 * The value the connection must ask the Hub about before registering it as a name: an
 * unpinned key from the sources that may pin (the key is then the value itself). Never a
 * Hub call here — the reader's warm path stays offline.
 */
export const pinCandidate = (k: AgentSessionKey): string | null =>
  k.pinned === null && (k.source === '--session' || k.source === 'MA2H_SESSION_ID') ? k.key : null;

const digest = (s: string, n: number): string => sha256Hex(s).slice(0, n);

/**
 * A harness variable's value is used as the name when it is a valid Hub session name;
 * otherwise a stable digest of it is (the key itself stays the exact value).
 */
function nameFor(source: KeySource, value: string): string {
  if (validateSessionName(value).ok) return value;
  return `${source === 'CLAUDE_CODE_SESSION_ID' ? 'claude' : 'agent'}-${digest(value, 16)}`;
}

export interface SessionKeyInput {
  flag: string | undefined;
  env: NodeJS.ProcessEnv;
  host: string;
  selfPid: number;
  inspect: ProcessInspector;
}

const CANNOT_TELL = 'Name it: pass --session <name>, or export MA2H_AGENT_SESSION_ID=<name> (one name per agent; any stable name works).';

export function resolveAgentSessionKey(input: SessionKeyInput): Result<AgentSessionKey> {
  if (input.flag !== undefined) {
    const v = input.flag;
    if (pinsOutright(v)) return ok({ key: v, source: '--session', pinned: v, name: null, declared: true, describe: `--session ${v}` });
    const named = validateSessionName(v, '--session');
    const id = validateId(v, '--session');
    if (!named.ok && !id.ok)
      return fail(`${named.reason}; nor is it a Hub session id (${id.reason}). Pass a session name, or the id of a session of this agent`);
    return ok({ key: v, source: '--session', pinned: null, name: v, declared: true, describe: `--session ${v}` });
  }
  for (const { source, pins } of DECLARED) {
    const raw = input.env[source];
    if (raw === undefined || raw.trim() === '') continue;
    const v = raw.trim();
    const describe = `${source}=${v}`;
    if (pins && pinsOutright(v)) return ok({ key: v, source, pinned: v, name: null, declared: true, describe });
    if (pins && !validateSessionName(v).ok) {
      return fail(
        `MA2H_SESSION_ID="${v}" is neither a Hub session id (at most 128 bytes, no '#', whitespace or control characters) nor a session name (1–64 of A-Z a-z 0-9 . _ : -)`,
      );
    }
    return ok({ key: v, source, pinned: null, name: nameFor(source, v), declared: true, describe });
  }
  const host = findHostProgram(input.selfPid, input.inspect);
  if (!host.ok) return fail(`could not determine this agent session: no --session, no session variable, and ${host.reason}. ${CANNOT_TELL}`);
  const h = host.value;
  const key = `host:${input.host}:${h.pid}:${h.startTime}`;
  const label = h.command.replace(/[^A-Za-z0-9._-]/g, '-').slice(0, 24) || 'host';
  return ok({
    key,
    source: 'host program',
    pinned: null,
    name: `${label}-${digest(key, 12)}`,
    declared: false,
    describe: `${h.command} pid ${h.pid}`,
  });
}
