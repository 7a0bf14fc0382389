import type { Coded } from '../../core/index.js';
import { plain } from '../../reader/index.js';
import { formatAddress, type AgentRow, type FleetRow, type Reachability } from '../../hub/contract/index.js';
import type { AgentAccess } from './access.js';
import { fetchAgentDirectory } from './directory.js';
import { hubFailureError } from './failures.js';
import { failureContext } from './send.js';

/** One agent of the account as `oh-hai fleet ls` shows it (fields: src/cli/json/outputs.ts FleetAgent). */
export interface FleetAgent {
  id: string;
  label: string | null;
  address: string;
  source: AgentRow['source'];
  reachability: Reachability | 'no_session';
  live_sessions: number;
  sessions: string[];
}

export interface AgentsView {
  agents: FleetAgent[];
  /** Why some agents may be missing (a Hub without a directory lists only agents with a live session); null when complete. */
  partial: string | null;
}

const RANK: Record<Reachability, number> = { online: 2, offline: 1, unknown: 0 };

/** The best reachability of an agent's live sessions: one online session makes the agent reachable now. */
function best(rows: readonly FleetRow[]): Reachability | 'no_session' {
  if (rows.length === 0) return 'no_session';
  return rows.reduce<Reachability>((b, r) => (RANK[r.reachability] > RANK[b] ? r.reachability : b), rows[0]!.reachability);
}

/** Directory rows (not revoked) joined with the fleet's live sessions; agents seen only in the fleet are kept too. Pure. */
export function joinAgents(directory: readonly AgentRow[] | null, fleet: readonly FleetRow[]): FleetAgent[] {
  const byAgent = new Map<string, FleetRow[]>();
  for (const r of fleet) byAgent.set(r.agent_id, [...(byAgent.get(r.agent_id) ?? []), r]);
  const known: { id: string; label: string | null; source: AgentRow['source'] }[] = (directory ?? []).filter((r) => !r.revoked);
  const listed = new Set(known.map((r) => r.id));
  for (const [id, rows] of byAgent) if (!listed.has(id)) known.push({ id, label: rows[0]!.agent_label, source: 'account' });
  return known.map((r) => {
    const rows = byAgent.get(r.id) ?? [];
    return {
      id: r.id,
      label: r.label,
      address: formatAddress(r.id),
      source: r.source,
      reachability: best(rows),
      live_sessions: rows.length,
      sessions: rows.map((s) => s.session_id),
    };
  });
}

/**
 * Every agent of the account (the directory, MA2H §10) with its live sessions (GET /v1/fleet):
 * `oh-hai fleet ls`. A Hub that advertises no directory still answers, from the fleet alone,
 * and says that agents with no live session are missing.
 */
export async function agentsView(a: AgentAccess, nowIso: string): Promise<Coded<AgentsView>> {
  const [dir, fleet] = await Promise.all([fetchAgentDirectory(a, nowIso, 'listing the agents'), a.client.fleet()]);
  if (!fleet.ok) return { ok: false, error: hubFailureError(fleet.failure, failureContext(a, 'listing the fleet', 'GET /v1/fleet')) };
  if (!dir.ok && dir.error.code !== 'no_agent_directory') return dir;
  const partial = dir.ok ? null : 'this Hub advertises no agent directory: only agents with a live session are listed';
  return { ok: true, value: { agents: joinAgents(dir.ok ? dir.value : null, fleet.value), partial } };
}

/** Table cells: a header, then one row per agent (label, principal address, reachability, live sessions). */
export function agentCells(agents: readonly FleetAgent[]): string[][] {
  const rows = agents.map((x) => [
    x.label === null ? '-' : plain(x.label),
    x.address,
    x.reachability === 'no_session' ? 'no live session' : x.reachability,
    x.live_sessions === 0 ? '0' : `${x.live_sessions} (${x.sessions.join(', ')})`,
  ]);
  return [['LABEL', 'ADDRESS', 'REACHABILITY', 'LIVE SESSIONS'], ...rows];
}
