import type { AgentRow } from '../contract/index.js';
import type { HubCore } from './core.js';
import { bad, good, type Answer } from './http.js';
import { hashToken, newId, newToken } from './ids.js';
import type { Sql, Tx } from './sql.js';

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

export const fromAgentRow = (r: Pick<AgentDbRow, 'id' | 'label' | 'revoked'>): KnownAgent => ({
  id: r.id,
  label: r.label,
  revoked: r.revoked === 1,
  source: 'account',
});

export async function findAgent(core: HubCore, q: Sql, id: string): Promise<KnownAgent | null> {
  const row = await q.get<AgentDbRow>('SELECT id, label, revoked, created_at FROM agents WHERE id = ?', id);
  if (row) return fromAgentRow(row);
  for (const configId of core.configAgents.values()) if (configId === id) return { id, label: null, revoked: false, source: 'config' };
  return null;
}

/** Who holds this token: an account agent (possibly revoked) or a config identity. */
export async function agentByToken(core: HubCore, q: Sql, tokenHash: string): Promise<KnownAgent | null> {
  const row = await q.get<AgentDbRow>('SELECT id, label, revoked, created_at FROM agents WHERE token_hash = ?', tokenHash);
  if (row) return fromAgentRow(row);
  const configId = core.configAgents.get(tokenHash);
  if (configId === undefined) return null;
  return findAgent(core, q, configId);
}

/** Mint an agent in the account; the token is returned once and only its hash is kept. */
export async function mintAgent(tx: Tx, label: string): Promise<{ agent: KnownAgent; token: string }> {
  const id = newId('agt');
  const token = newToken('a');
  await tx.run('INSERT INTO agents (id, label, token_hash, revoked, created_at) VALUES (?, ?, ?, 0, ?)', id, label, hashToken(token), tx.now);
  return { agent: { id, label, revoked: false, source: 'account' }, token };
}

export async function revokeAgent(core: HubCore, tx: Tx, id: string): Promise<Answer<KnownAgent>> {
  const agent = await findAgent(core, tx, id);
  if (!agent) return bad(404, 'agent_not_found', `no agent ${id} in this account`);
  if (agent.source === 'config') {
    return bad(400, 'invalid_request', `agent ${id} comes from the Hub's configured token store (MA2H_AGENT_TOKENS); remove it there and restart the Hub`);
  }
  await tx.run('UPDATE agents SET revoked = 1 WHERE id = ?', id);
  tx.wake('credentials', id);
  return good({ ...agent, revoked: true });
}

/** The account agent directory (§10): four fields per row; config identities only when asked. */
export async function directory(core: HubCore, read: Sql, includeConfig: boolean): Promise<AgentRow[]> {
  const rows = (await read.all<AgentDbRow>('SELECT id, label, revoked, created_at FROM agents ORDER BY created_at, id')).map(fromAgentRow);
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
