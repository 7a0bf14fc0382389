import { fail, ok, type Result } from '../../core/index.js';
import { describe, utf8Bytes } from '../../util/shape.js';

/** MA2H §0: ids are opaque, at most 128 bytes (agent ids 512), no `#`, whitespace or control characters. */
export const MAX_ID_BYTES = 128;
export const MAX_AGENT_ID_BYTES = 512;

/**
 * '#', whitespace (\s: the same set with or without the u flag) and Cc (U+0000–U+001F,
 * U+007F–U+009F). Spelled without the u flag and \p{Cc}: a Unicode property class makes V8
 * build ICU sets on first use, ~1 M instructions of every bridge run, for the same characters
 * (test/unit/contract/ids.test.ts checks every code point against the \p{Cc} form). Every
 * character it can match is one UTF-16 unit, so it matches wherever the u form does.
 */
const FORBIDDEN_IN_ID = /[#\s\u0000-\u001f\u007f-\u009f]/;
const SESSION_NAME = /^[A-Za-z0-9._:-]{1,64}$/;

/**
 * The usual ids and addresses, each in one regular-expression test (validateEntry's lean path):
 * an id of 1–42 characters (at most 126 bytes of UTF-8, so no count is needed) and an agent id
 * of 1–170 (510 bytes), none of them forbidden. A string they refuse may still be valid: the
 * full check decides it.
 */
const ID_CHAR = `[^${FORBIDDEN_IN_ID.source.slice(1)}`;
const PLAIN_ADDRESS = `agent:${ID_CHAR}{1,170}(?:#${ID_CHAR}{1,42})?`;
export const PLAIN_ID = new RegExp(`^${ID_CHAR}{1,42}$`);
export const PLAIN_TO = new RegExp(`^${PLAIN_ADDRESS}$`);
export const PLAIN_FROM = new RegExp(`^(?:human:${ID_CHAR}{1,42}|${PLAIN_ADDRESS})$`);

/**
 * What is wrong with an id, as the rest of a sentence that begins with its name, or null.
 * The name (often built from the whole address) is put together only when something is wrong.
 */
function idFault(s: unknown, maxBytes: number): string | null {
  if (typeof s !== 'string') return `must be a string, got ${describe(s)}`;
  if (s.length === 0) return 'is empty';
  // A UTF-16 unit is at most 3 bytes of UTF-8: a short id needs no count.
  if (s.length * 3 > maxBytes) {
    const bytes = utf8Bytes(s);
    if (bytes > maxBytes) return `is ${bytes} bytes; the limit is ${maxBytes}`;
  }
  const bad = FORBIDDEN_IN_ID.exec(s);
  if (bad) {
    const ch = bad[0] === '#' ? "'#'" : `U+${bad[0].codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`;
    return `${describe(s)} contains ${ch}; ids may not contain '#', whitespace or control characters`;
  }
  return null;
}

function checkId(s: unknown, what: string, maxBytes: number): Result<string> {
  const fault = idFault(s, maxBytes);
  return fault === null ? ok(s as string) : fail(`${what} ${fault}`);
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
  const agentId = hash < 0 ? rest : rest.slice(0, hash);
  const agentFault = idFault(agentId, MAX_AGENT_ID_BYTES);
  if (agentFault !== null) return fail(`agent id in ${what} ${describe(s)} ${agentFault}`);
  if (hash < 0) return ok({ agentId, sessionId: null });
  const sessionId = rest.slice(hash + 1);
  const sessionFault = idFault(sessionId, MAX_ID_BYTES);
  if (sessionFault !== null) return fail(`session id in ${what} ${describe(s)} ${sessionFault}`);
  return ok({ agentId, sessionId });
}

export const formatAddress = (agentId: string, sessionId?: string | null): string => (sessionId ? `agent:${agentId}#${sessionId}` : `agent:${agentId}`);

/** `human:<account_id>`: a sender only, never an address. */
export const isPrincipalSender = (s: string): boolean => s.startsWith('human:') && validateId(s.slice('human:'.length), 'account id').ok;

/** An entry's `from`: an address or `human:<id>`. */
export function validateSender(s: unknown, what = 'from'): Result<string> {
  if (typeof s === 'string' && s.startsWith('human:')) {
    const fault = idFault(s.slice('human:'.length), MAX_ID_BYTES);
    return fault === null ? ok(s) : fail(`account id in ${what} ${describe(s)} ${fault}`);
  }
  const a = parseAddress(s, what);
  return a.ok ? ok(s as string) : fail(`${a.reason} (or human:<account_id>)`);
}
