import { isPolicyName } from '../../config/index.js';
import type { Coded } from '../../core/index.js';
import { resolveName, type AgentRow, type Resolved } from '../../hub/contract/index.js';
import { plain } from '../../reader/index.js';
import { readDirectoryCache, type DirectoryCacheKey } from '../../spool/index.js';

/**
 * `--allow-from <label>` (docs/messaging.md "Names"): a label, or a bare agent id, resolves to
 * `agent:<id>` once, when this run resolves its settings, by the rule `--to` uses. What the
 * connection records in settings.json and enforces is the id, so a later relabel cannot widen
 * the policy, and the running connection is never asked to look anything up.
 *
 * Where the answer comes from: this agent's directory cache when it names the label exactly
 * one live agent (no Hub call: the bridge's warm path gains none); otherwise — no cache, or the
 * cache finds none or several — one fetch of the directory, whose answer is final (unknown or
 * ambiguous is exit 2 naming the candidates). A stale cache can only name an agent that held
 * the label when it was read; the line printed says which id it became.
 */

export interface ResolvedAllowFrom {
  /** The items with every name replaced by its `agent:<id>[#sess_…]`, in order. */
  items: string[];
  /** One stderr line per name: what it became and where that came from. */
  lines: string[];
}

const WHERE = '--allow-from';

export async function resolveAllowFrom(
  items: readonly string[],
  cache: DirectoryCacheKey,
  fetchDirectory: () => Promise<Coded<AgentRow[]>>,
): Promise<Coded<ResolvedAllowFrom>> {
  const cached = items.some(isPolicyName) ? readDirectoryCache(cache) : null;
  let fetched: AgentRow[] | null = null;
  const out: ResolvedAllowFrom = { items: [], lines: [] };
  for (const item of items) {
    if (!isPolicyName(item)) {
      out.items.push(item);
      continue;
    }
    let found: Coded<Resolved> | null = cached === null ? null : resolveName(item, cached, WHERE);
    let from = 'the directory cache';
    if (found === null || !found.ok) {
      if (fetched === null) {
        const rows = await fetchDirectory();
        if (!rows.ok) return rows;
        fetched = rows.value;
      }
      found = resolveName(item, fetched, WHERE);
      from = 'the agent directory';
      if (!found.ok) return found;
    }
    const { address, label } = found.value;
    out.items.push(address);
    out.lines.push(
      `${WHERE} ${plain(item)} is ${plain(address)}${label === null ? '' : ` (${plain(label)})`}, from ${from}: the policy names that id, so relabelling an agent cannot widen it`,
    );
  }
  return { ok: true, value: out };
}
