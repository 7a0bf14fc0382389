import type { Reachability } from '../contract/index.js';
import type { HubCore } from './core.js';
import type { SessionRow } from './sessions.js';
import type { Sql, Tx } from './sql.js';

const within = (core: HubCore, now: number, at: number | null): boolean => at !== null && now - at <= core.config.presenceSeconds * 1000;

/** A session address: online when a consumer holds a stream or drained within the presence window (§10). */
export function sessionReachability(core: HubCore, r: Pick<SessionRow, 'id' | 'seen_at'>, now: number): Reachability {
  if (core.streams.isOpen(r.id)) return 'online';
  if (r.seen_at === null) return 'unknown';
  return within(core, now, r.seen_at) ? 'online' : 'offline';
}

/** The principal drain was answered (each answered drain is the agent's presence heartbeat). */
export async function touchPrincipal(tx: Tx, agentId: string): Promise<void> {
  await tx.run(
    'INSERT INTO principal_presence (agent_id, seen_at) VALUES (?, ?) ON CONFLICT(agent_id) DO UPDATE SET seen_at = excluded.seen_at',
    agentId,
    tx.now,
  );
}

/**
 * `agent:<id>`: online when the principal drain or any live session of the agent is (§12). ONE
 * statement (a send to a principal address asks it every time): the principal's last drain, whether
 * any session of the agent was ever seen, and one row per live session (none: one row of NULLs).
 */
export async function principalReachability(core: HubCore, q: Sql, agentId: string, now: number): Promise<Reachability> {
  const rows = await q.all<{ principal_seen: number | null; ever_seen: number | null; id: string | null; seen_at: number | null }>(
    `SELECT p.seen_at AS principal_seen, (SELECT 1 FROM sessions WHERE agent_id = a.id AND seen_at IS NOT NULL LIMIT 1) AS ever_seen, s.id, s.seen_at
       FROM (SELECT CAST(? AS TEXT) AS id) AS a
       LEFT JOIN principal_presence AS p ON p.agent_id = a.id
       LEFT JOIN sessions AS s ON s.agent_id = a.id AND s.state = 'active'`,
    agentId,
  );
  const first = rows[0]!;
  if (within(core, now, first.principal_seen)) return 'online';
  for (const s of rows) if (s.id !== null && sessionReachability(core, { id: s.id, seen_at: s.seen_at }, now) === 'online') return 'online';
  return first.principal_seen !== null || first.ever_seen !== null ? 'offline' : 'unknown';
}
