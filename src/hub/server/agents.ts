import type { AgentRow } from '../contract/index.js';
import type { HubCore } from './core.js';
import { bad, good, type Answer } from './http.js';
import { hashToken, newId, newToken } from './ids.js';

interface AgentDbRow {
  id: string;
  label: string;
  revoked: number;
  created_at: number;
}

/** An agent the Hub knows: minted in the account, or named by the configured token store. */
export interface KnownAgent {
  id: string;
  label: string | null;
  revoked: boolean;
  source: 'account' | 'config';
}

const fromRow = (r: AgentDbRow): KnownAgent => ({ id: r.id, label: r.label, revoked: r.revoked === 1, source: 'account' });

export function findAgent(core: HubCore, id: string): KnownAgent | null {
  const row = core.db.prepare('SELECT id, label, revoked, created_at FROM agents WHERE id = ?').get(id) as AgentDbRow | undefined;
  if (row) return fromRow(row);
  for (const configId of core.configAgents.values()) if (configId === id) return { id, label: null, revoked: false, source: 'config' };
  return null;
}

/** Who holds this token: an account agent (possibly revoked) or a config identity. */
export function agentByToken(core: HubCore, tokenHash: string): KnownAgent | null {
  const row = core.db.prepare('SELECT id, label, revoked, created_at FROM agents WHERE token_hash = ?').get(tokenHash) as AgentDbRow | undefined;
  if (row) return fromRow(row);
  const configId = core.configAgents.get(tokenHash);
  if (configId === undefined) return null;
  return findAgent(core, configId);
}

/** Mint an agent in the account; the token is returned once and only its hash is kept. */
export function mintAgent(core: HubCore, label: string): { agent: KnownAgent; token: string } {
  const id = newId('agt');
  const token = newToken('a');
  core.db.prepare('INSERT INTO agents (id, label, token_hash, revoked, created_at) VALUES (?, ?, ?, 0, ?)').run(id, label, hashToken(token), core.clock.now());
  return { agent: { id, label, revoked: false, source: 'account' }, token };
}

export function revokeAgent(core: HubCore, id: string): Answer<KnownAgent> {
  const agent = findAgent(core, id);
  if (!agent) return bad(404, 'agent_not_found', `no agent ${id} in this account`);
  if (agent.source === 'config') {
    return bad(400, 'invalid_request', `agent ${id} comes from the Hub's configured token store (MA2H_AGENT_TOKENS); remove it there and restart the Hub`);
  }
  core.db.prepare('UPDATE agents SET revoked = 1 WHERE id = ?').run(id);
  return good({ ...agent, revoked: true });
}

/** The account agent directory (§10): four fields per row; config identities only when asked. */
export function directory(core: HubCore, includeConfig: boolean): AgentRow[] {
  const rows = (core.db.prepare('SELECT id, label, revoked, created_at FROM agents ORDER BY created_at, id').all() as AgentDbRow[]).map(fromRow);
  const out: AgentRow[] = rows.map((a) => ({ id: a.id, label: a.label, revoked: a.revoked, source: 'account' }));
  if (includeConfig) {
    const seen = new Set(out.map((r) => r.id));
    for (const id of core.configAgents.values()) {
      if (seen.has(id)) continue;
      seen.add(id);
      out.push({ id, label: null, revoked: false, source: 'config' });
    }
  }
  return out;
}

export const agentView = (a: KnownAgent): AgentRow => ({ id: a.id, label: a.label, revoked: a.revoked, source: a.source });
