import type { Reachability } from '../contract/index.js';
import type { HubCore } from './core.js';
import type { SessionRow } from './sessions.js';

const within = (core: HubCore, at: number | null): boolean => at !== null && core.clock.now() - at <= core.config.presenceSeconds * 1000;

/** A session address: online when a consumer holds a stream or drained within the presence window (§10). */
export function sessionReachability(core: HubCore, r: Pick<SessionRow, 'id' | 'seen_at'>): Reachability {
  if (core.streams.isOpen(r.id)) return 'online';
  if (r.seen_at === null) return 'unknown';
  return within(core, r.seen_at) ? 'online' : 'offline';
}

/** The principal drain was answered (each answered drain is the agent's presence heartbeat). */
export function touchPrincipal(core: HubCore, agentId: string): void {
  core.db
    .prepare('INSERT INTO principal_presence (agent_id, seen_at) VALUES (?, ?) ON CONFLICT(agent_id) DO UPDATE SET seen_at = excluded.seen_at')
    .run(agentId, core.clock.now());
}

/** `agent:<id>`: online when the principal drain or any live session of the agent is (§12). */
export function principalReachability(core: HubCore, agentId: string): Reachability {
  const principal = core.db.prepare('SELECT seen_at FROM principal_presence WHERE agent_id = ?').get(agentId) as { seen_at: number } | undefined;
  if (principal && within(core, principal.seen_at)) return 'online';
  const live = core.db.prepare(`SELECT id, seen_at FROM sessions WHERE agent_id = ? AND state = 'active'`).all(agentId) as Pick<SessionRow, 'id' | 'seen_at'>[];
  if (live.some((s) => sessionReachability(core, s) === 'online')) return 'online';
  const everSeen = principal !== undefined || core.db.prepare('SELECT 1 FROM sessions WHERE agent_id = ? AND seen_at IS NOT NULL LIMIT 1').get(agentId) !== undefined;
  return everSeen ? 'offline' : 'unknown';
}
