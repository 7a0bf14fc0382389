import { EXIT, type Coded, type CodedError } from '../../core/index.js';
import { formatAddress, isSessionId, parseAddress } from './ids.js';
import type { AgentRow } from './types.js';

/**
 * Agent names (docs/messaging.md "Names"): where an address is taken, a value that does not
 * start with `agent:` is a name looked up in the account's agent directory (MA2H §10).
 *
 * The rule, deliberately simple enough to say in one sentence: `agent:…` is an address and
 * is sent as written, never looked up; anything else is `<name>` or `<name>#sess_…`, and
 * `<name>` matches every agent that is not revoked whose label OR id equals it exactly. One
 * match resolves; none or several is exit 2 naming the candidates. So a bare `agt_…` works
 * (it matches that agent's id), and a label that happens to look like another agent's id is
 * ambiguous rather than silently picking one.
 */

/** What a name resolved to: the address to send to, and the agent's label to print beside it. */
export interface Resolved {
  address: string;
  agentId: string;
  label: string | null;
  /** The input was a name (looked up), not an `agent:` address. */
  byName: boolean;
}

/** Whether this destination needs the directory: anything that is not an `agent:` address. */
export const isName = (to: string): boolean => !to.startsWith('agent:');

/** Split `<name>#sess_…`; a `#` that is not followed by a session id is part of nothing valid. */
function splitName(to: string, where: string): Coded<{ name: string; session: string | null }> {
  const hash = to.indexOf('#');
  const name = hash < 0 ? to : to.slice(0, hash);
  const session = hash < 0 ? null : to.slice(hash + 1);
  if (name.trim() === '') return usage('bad_address', `${where} ${JSON.stringify(to)} names no agent; ${NAME_FORMS}`);
  if (session !== null && !isSessionId(session)) {
    return usage('bad_address', `${where} ${JSON.stringify(to)}: after '#' comes a session id (sess_…, from \`oh-hai fleet ls --sessions\`); ${NAME_FORMS}`);
  }
  return { ok: true, value: { name, session } };
}

export const NAME_FORMS = 'give an agent label (reviewer), or an address agent:<id> or agent:<id>#sess_… (see `oh-hai fleet ls`)';

const usage = (code: string, message: string): { ok: false; error: CodedError } => ({ ok: false, error: { code, exit: EXIT.usage, message } });

/** `label (agent:<id>)`, or the bare address when the agent has no label. */
export const describeAgent = (row: { id: string; label: string | null }): string =>
  row.label === null ? formatAddress(row.id) : `${row.label} (${formatAddress(row.id)})`;

/** At most this many candidates are named in an error; the rest is counted. */
const MAX_NAMED = 12;

function nameList(rows: readonly AgentRow[]): string {
  const named = rows.slice(0, MAX_NAMED).map(describeAgent).join(', ');
  return rows.length > MAX_NAMED ? `${named} and ${rows.length - MAX_NAMED} more` : named;
}

/** Resolve `to` against the directory's rows (pure; `where` names the flag or field for the error). */
export function resolveName(to: string, rows: readonly AgentRow[], where: string): Coded<Resolved> {
  if (!isName(to)) {
    const parsed = parseAddress(to, where);
    if (!parsed.ok) return usage('bad_address', `${parsed.reason}; ${NAME_FORMS}`);
    const row = rows.find((r) => r.id === parsed.value.agentId);
    return { ok: true, value: { address: to, agentId: parsed.value.agentId, label: row?.label ?? null, byName: false } };
  }
  const split = splitName(to, where);
  if (!split.ok) return split;
  const { name, session } = split.value;
  const live = rows.filter((r) => !r.revoked);
  const matches = live.filter((r) => r.label === name || r.id === name);
  if (matches.length === 1) {
    const row = matches[0]!;
    return { ok: true, value: { address: formatAddress(row.id, session), agentId: row.id, label: row.label, byName: true } };
  }
  if (matches.length > 1) {
    const why = (r: AgentRow): string => (r.id === name ? `${describeAgent(r)} by its id` : `${describeAgent(r)} by its label`);
    return usage(
      'ambiguous_name',
      `${where} ${JSON.stringify(name)} matches ${matches.length} agents in this account: ${matches.map(why).join('; ')}. ` +
        `Address the one you mean by its id, e.g. ${where} ${formatAddress(matches[0]!.id, session)}`,
    );
  }
  const revoked = rows.filter((r) => r.revoked && (r.label === name || r.id === name));
  if (revoked.length > 0) {
    return usage(
      'unknown_name',
      `${where} ${JSON.stringify(name)} names a revoked agent (${nameList(revoked)}), which takes no mail; live agents: ${nameList(live) || 'none'}`,
    );
  }
  const folded = live.filter((r) => r.label !== null && r.label.toLowerCase() === name.toLowerCase());
  const hint = folded.length > 0 ? `did you mean ${nameList(folded)}? Labels match exactly, case included. ` : '';
  return usage(
    'unknown_name',
    `${where} ${JSON.stringify(name)} is no agent's label or id in this account's directory. ${hint}` +
      `Agents: ${nameList(live) || 'none'}. An agent the directory does not list is addressed as agent:<id>`,
  );
}

/** `agent:<id>[#sess]` → the label `labels` (agent id → label) knows for that agent, else null; `human:…` and anything else → null. */
export function labelFor(labels: ReadonlyMap<string, string>, address: string): string | null {
  if (!address.startsWith('agent:')) return null;
  const rest = address.slice('agent:'.length);
  const hash = rest.indexOf('#');
  return labels.get(hash < 0 ? rest : rest.slice(0, hash)) ?? null;
}
