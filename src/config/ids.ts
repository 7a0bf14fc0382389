import { MAX_AGENT_ID_BYTES } from '../hub/contract/ids.js';

// C0, DEL and C1: a control character in an id is never something a person typed on purpose.
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/u;
const WHITESPACE = /\s/u;

/**
 * Why an agent id can never appear in a Hub address, or null when it can — one reason per class,
 * for the policy writer's "dropped" lines. `#` would split it into an agent and a session;
 * whitespace and control characters are outside MA2H's id alphabet (§0).
 */
export function badAgentIdReason(id: string): string | null {
  if (id.length === 0) return 'it is empty';
  if (id.includes('#')) return "it contains '#', which separates an agent from a session in an address";
  if (CONTROL.test(id)) return 'it contains a control character';
  if (WHITESPACE.test(id)) return 'it contains whitespace';
  const bytes = Buffer.byteLength(id, 'utf8');
  if (bytes > MAX_AGENT_ID_BYTES) return `it is ${bytes} bytes, over the Hub's ${MAX_AGENT_ID_BYTES}-byte bound`;
  return null;
}

/** An id shown in a message: JSON-quoted (so control characters are visible) and cut short when long. */
export function showId(id: string): string {
  const shown = id.length > 80 ? `${id.slice(0, 80)}…` : id;
  return JSON.stringify(shown);
}
