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
 * validateEntry's lean path: an id of 1–`units` UTF-16 units, none forbidden. At most 3 bytes of
 * UTF-8 a unit, so 42 units (126 bytes) or 170 (510) need no byte count; a longer id is left to
 * the full check. FORBIDDEN_IN_ID is the one pattern: each new one costs a run its compile twice
 * over (V8's regexp bytecode, then native code once it runs again), ~0.15 M instructions each.
 */
const isShortId = (s: string, units: number): boolean => s.length > 0 && s.length <= units && !FORBIDDEN_IN_ID.test(s);

/** `agent:<agent_id>` or `agent:<agent_id>#<session_id>` with both ids short (isShortId). */
export function isShortAddress(s: string): boolean {
  if (!s.startsWith('agent:')) return false;
  const hash = s.indexOf('#', 6);
  return hash < 0 ? isShortId(s.slice(6), 170) : isShortId(s.slice(6, hash), 170) && isShortId(s.slice(hash + 1), 42);
}

/** An entry's `from` in the lean path's shape: a short address or `human:<short id>`. */
export const isShortSender = (s: string): boolean => (s.startsWith('human:') ? isShortId(s.slice(6), 42) : isShortAddress(s));

/** An id of at most 42 units (isShortId). */
export const isShortEntryId = (v: unknown): v is string => typeof v === 'string' && isShortId(v, 42);

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
