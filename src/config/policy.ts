import { type Result, fail, ok } from '../core/index.js';
import { parseAddress } from '../hub/contract/ids.js';
import { showId } from './ids.js';

/**
 * The sender policy (MA2H §13.4): which principals may ask or task this agent. It governs
 * only addressed asks and tasks; directives, notifies, responses and receipts are always
 * delivered. No policy at all (`null`) is the fail-closed choice, never an implicit default.
 */
export interface Policy {
  readonly anyInAccount: boolean;
  /** Agent ids admitted from any of their sessions. */
  readonly agents: ReadonlySet<string>;
  /** `<agent id>#<session id>` pairs admitted from that one session. */
  readonly sessions: ReadonlySet<string>;
}

export const ANY_IN_ACCOUNT = 'any-in-account';

const ITEM_FORMS = `${ANY_IN_ACCOUNT}, agent:<id>, or agent:<id>#<session id>`;

/**
 * An item that is none of the policy's own forms: an agent's label (or bare id), which
 * `--allow-from` resolves to `agent:<id>` before the policy is parsed (src/cli/resolve/allow-from.ts).
 */
export const isPolicyName = (item: string): boolean => item !== ANY_IN_ACCOUNT && !item.startsWith('agent:') && !item.startsWith('human:');

function parseItem(item: string): Result<{ kind: 'any' } | { kind: 'agent'; id: string } | { kind: 'session'; id: string; session: string }> {
  if (item === ANY_IN_ACCOUNT) return ok({ kind: 'any' });
  if (item.startsWith('human:')) return fail(`${showId(item)} names a human; humans send directives, which are always delivered — use ${ITEM_FORMS}`);
  // A policy names ids, never labels (docs/messaging.md "Names"): `--allow-from <label>` is
  // resolved to its id before it gets here; a label written in a file would be looked up on
  // every run and widen the policy silently when an agent is relabelled.
  if (!item.startsWith('agent:'))
    return fail(
      `${showId(item)} is not a sender policy item; use ${ITEM_FORMS} (a policy names agents by id: \`oh-hai fleet ls\` shows each label's agent:<id>; --allow-from <label> resolves a label for one run)`,
    );
  const address = parseAddress(item, 'item');
  if (!address.ok) return fail(`${address.reason}, so it could never match a sender`);
  const { agentId, sessionId } = address.value;
  return ok(sessionId === null ? { kind: 'agent', id: agentId } : { kind: 'session', id: agentId, session: sessionId });
}

/** Parse `allow_from` items; the reason names the first bad item and the accepted forms. */
export function parsePolicy(list: readonly string[]): Result<Policy> {
  let anyInAccount = false;
  const agents = new Set<string>();
  const sessions = new Set<string>();
  for (const item of list) {
    const parsed = parseItem(item);
    if (!parsed.ok) return parsed;
    const p = parsed.value;
    if (p.kind === 'any') anyInAccount = true;
    else if (p.kind === 'agent') agents.add(p.id);
    else sessions.add(`${p.id}#${p.session}`);
  }
  return ok({ anyInAccount, agents, sessions });
}

/** The policy as sorted, deduplicated items: what a consumer records and a reader compares. */
export function policyItems(policy: Policy): string[] {
  const items = [...policy.agents].map((id) => `agent:${id}`).concat([...policy.sessions].map((s) => `agent:${s}`));
  items.sort();
  return policy.anyInAccount ? [ANY_IN_ACCOUNT, ...items] : items;
}

/** Same admitted senders, whatever the order or repetition of the items. `null` is only equal to `null`. */
export function policyEquals(a: Policy | null, b: Policy | null): boolean {
  if (a === null || b === null) return a === b;
  const x = policyItems(a);
  const y = policyItems(b);
  return x.length === y.length && x.every((item, i) => item === y[i]);
}

export function describePolicy(policy: Policy | null): string {
  if (policy === null) return 'none declared (fail-closed: every addressed ask/task is refused)';
  const items = policyItems(policy);
  if (items.length === 0) return 'an empty allow_from (every addressed ask/task is refused)';
  return items.join(', ');
}

/** The fields of an entry the policy reads; the contract's Entry satisfies it. */
export interface PolicyEntry {
  readonly kind: string;
  readonly from: string;
  readonly intent?: string;
}

export type Admission = { admit: true } | { admit: false; reason: string };

/**
 * Whether the consumer may deliver this entry. Only a `message` with intent ask or task is
 * subject to the policy. The refusal says how to admit the sender by hand, and that a
 * re-run of `oh-hai upgrade` will not (the written policy is never refreshed, #1127).
 */
export function policyAdmits(policy: Policy | null, entry: PolicyEntry, self: { agentId: string }): Admission {
  if (entry.kind !== 'message' || (entry.intent !== 'ask' && entry.intent !== 'task')) return { admit: true };
  const what = `${entry.intent} from ${entry.from} to agent:${self.agentId}`;
  const sender = parseAddress(entry.from);
  if (!sender.ok) return { admit: false, reason: `${what} refused: the sender is not an agent address, and only agents may ask or task` };
  const { agentId: id, sessionId: session } = sender.value;
  const byHand =
    `to admit this sender, add "agent:${id}" to [bridge] allow_from in the user config (or pass --allow-from agent:${id}) — ask the operator if unsure; ` +
    're-running `oh-hai upgrade` will not add it once a policy exists (the policy is written once, never refreshed: #1127)';
  if (policy === null)
    return { admit: false, reason: `${what} refused: no sender policy is declared, so every addressed ask/task is refused (fail-closed); ${byHand}` };
  if (policy.anyInAccount || policy.agents.has(id) || (session !== null && policy.sessions.has(`${id}#${session}`))) return { admit: true };
  return { admit: false, reason: `${what} refused: the declared policy (${describePolicy(policy)}) does not admit it; ${byHand}` };
}
