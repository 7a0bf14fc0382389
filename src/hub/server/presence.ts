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

/** `agent:<id>`: online when the principal drain or any live session of the agent is (§12). */
export async function principalReachability(core: HubCore, q: Sql, agentId: string, now: number): Promise<Reachability> {
  const principal = await q.get<{ seen_at: number }>('SELECT seen_at FROM principal_presence WHERE agent_id = ?', agentId);
  if (principal && within(core, now, principal.seen_at)) return 'online';
  const live = await q.all<Pick<SessionRow, 'id' | 'seen_at'>>(`SELECT id, seen_at FROM sessions WHERE agent_id = ? AND state = 'active'`, agentId);
  if (live.some((s) => sessionReachability(core, s, now) === 'online')) return 'online';
  const everSeen = principal !== null || (await q.get('SELECT 1 AS one FROM sessions WHERE agent_id = ? AND seen_at IS NOT NULL LIMIT 1', agentId)) !== null;
  return everSeen ? 'offline' : 'unknown';
}
