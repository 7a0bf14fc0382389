import { fail, ok, type Result } from '../../core/index.js';
import { describe, utf8Bytes } from '../../util/shape.js';

/** MA2H §0: ids are opaque, at most 128 bytes (agent ids 512), no `#`, whitespace or control characters. */
export const MAX_ID_BYTES = 128;
export const MAX_AGENT_ID_BYTES = 512;

const FORBIDDEN_IN_ID = /[#\s\p{Cc}]/u;
const SESSION_NAME = /^[A-Za-z0-9._:-]{1,64}$/;

function checkId(s: unknown, what: string, maxBytes: number): Result<string> {
  if (typeof s !== 'string') return fail(`${what} must be a string, got ${describe(s)}`);
  if (s.length === 0) return fail(`${what} is empty`);
  const bytes = utf8Bytes(s);
  if (bytes > maxBytes) return fail(`${what} is ${bytes} bytes; the limit is ${maxBytes}`);
  const bad = FORBIDDEN_IN_ID.exec(s);
  if (bad) {
    const ch = bad[0] === '#' ? "'#'" : `U+${bad[0].codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`;
    return fail(`${what} ${describe(s)} contains ${ch}; ids may not contain '#', whitespace or control characters`);
  }
  return ok(s);
}

export const validateId = (s: unknown, what: string): Result<string> => checkId(s, what, MAX_ID_BYTES);

export const validateAgentId = (s: unknown, what = 'agent id'): Result<string> => checkId(s, what, MAX_AGENT_ID_BYTES);

export function validateSessionName(s: unknown, what = 'session name'): Result<string> {
  if (typeof s !== 'string') return fail(`${what} must be a string, got ${describe(s)}`);
  if (!SESSION_NAME.test(s)) {
    return fail(`${what} ${describe(s)} must be 1–64 characters of A-Z a-z 0-9 . _ : -`);
  }
  return ok(s);
}

/** A Hub session id (`sess_…`), as opposed to a session name: a value of this form pins a session. */
export const isSessionId = (s: string): boolean => s.startsWith('sess_') && s.length > 5 && validateId(s, 'session id').ok;

export interface Address {
  agentId: string;
  /** null for the principal mailbox `agent:<id>`. */
  sessionId: string | null;
}

export function parseAddress(s: unknown, what = 'address'): Result<Address> {
  if (typeof s !== 'string') return fail(`${what} must be a string, got ${describe(s)}`);
  if (!s.startsWith('agent:')) {
    return fail(`${what} ${describe(s)} must be agent:<agent_id> or agent:<agent_id>#<session_id>`);
  }
  const rest = s.slice('agent:'.length);
  const hash = rest.indexOf('#');
  const agent = validateAgentId(hash < 0 ? rest : rest.slice(0, hash), `agent id in ${what} ${describe(s)}`);
  if (!agent.ok) return agent;
  if (hash < 0) return ok({ agentId: agent.value, sessionId: null });
  const session = validateId(rest.slice(hash + 1), `session id in ${what} ${describe(s)}`);
  if (!session.ok) return session;
  return ok({ agentId: agent.value, sessionId: session.value });
}

export const formatAddress = (agentId: string, sessionId?: string | null): string => (sessionId ? `agent:${agentId}#${sessionId}` : `agent:${agentId}`);

/** `human:<account_id>`: a sender only, never an address. */
export const isPrincipalSender = (s: string): boolean => s.startsWith('human:') && validateId(s.slice('human:'.length), 'account id').ok;

/** An entry's `from`: an address or `human:<id>`. */
export function validateSender(s: unknown, what = 'from'): Result<string> {
  if (typeof s === 'string' && s.startsWith('human:')) {
    const id = validateId(s.slice('human:'.length), `account id in ${what} ${describe(s)}`);
    return id.ok ? ok(s) : id;
  }
  const a = parseAddress(s, what);
  return a.ok ? ok(s as string) : fail(`${a.reason} (or human:<account_id>)`);
}
