import type { IncomingMessage } from 'node:http';
import { agentByToken } from './agents.js';
import type { HubCore } from './core.js';
import { bad, good, type Answer } from './http.js';
import { hashToken, presentedTokenHash } from './ids.js';
import { getMeta } from './account.js';

export type Caller = { kind: 'human' } | { kind: 'agent'; agentId: string; label: string | null; source: 'account' | 'config' };

/** Which token kinds an endpoint accepts. */
export type Needs = 'none' | 'agent' | 'human' | 'any';

/** Resolve `Authorization: Bearer <token>`; missing, unknown or revoked is 401 (§0). */
export async function authenticate(core: HubCore, req: IncomingMessage): Promise<Answer<Caller>> {
  const header = req.headers.authorization;
  const m = header === undefined ? null : /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!m) return bad(401, 'unauthorized', 'send the credential as "Authorization: Bearer <token>"');
  const hash = presentedTokenHash(m[1]!);
  if (hash === (await getMeta(core.store.read, 'human_token_hash'))) return good({ kind: 'human' });
  const agent = await agentByToken(core, core.store.read, hash);
  if (!agent) return bad(401, 'unauthorized', 'the token is not known to this Hub');
  if (agent.revoked) return bad(401, 'unauthorized', `agent ${agent.id} has been revoked; a human must mint a new agent`);
  return good({ kind: 'agent', agentId: agent.id, label: agent.label, source: agent.source });
}

/** 403 forbidden when the caller's kind of token cannot use this endpoint. */
export function checkKind(caller: Caller, needs: Needs): Answer<Caller> {
  if (needs === 'any' || needs === 'none' || caller.kind === needs) return good(caller);
  return bad(
    403,
    'forbidden',
    needs === 'human' ? "this endpoint needs the account's human token, not an agent token" : 'this endpoint needs an agent token, not the human token',
  );
}

/** Query parameters that carry a credential by name; a token is never put in a URL (§0). */
const TOKEN_PARAMS = new Set(['token', 'access_token', 'bearer', 'authorization', 'auth', 'api_key', 'apikey']);

/** True when the query string carries a credential: by parameter name, or a value that is a live token. */
export async function tokenInUrl(core: HubCore, url: URL): Promise<boolean> {
  for (const [name, value] of url.searchParams) {
    if (TOKEN_PARAMS.has(name.toLowerCase())) return true;
    if (value.length >= 16) {
      const hash = hashToken(value);
      if (hash === (await getMeta(core.store.read, 'human_token_hash')) || (await agentByToken(core, core.store.read, hash)) !== null) return true;
    }
  }
  return false;
}
