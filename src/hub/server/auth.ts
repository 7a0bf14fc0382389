import type { IncomingMessage } from 'node:http';
import { agentByToken, fromAgentRow } from './agents.js';
import type { HubCore } from './core.js';
import { bad, good, type Answer } from './http.js';
import { hashToken, presentedTokenHash } from './ids.js';
import type { Sql } from './sql.js';

export type Caller = { kind: 'human' } | { kind: 'agent'; agentId: string; label: string | null; source: 'account' | 'config' };

/** Which token kinds an endpoint accepts. */
export type Needs = 'none' | 'agent' | 'human' | 'any';

/** Who is calling, and the account switch every messaging route checks, as one request sees them. */
export interface Authenticated {
  caller: Caller;
  /** Agent messaging is on (`PATCH /v1/account`); read in the same statement as the credential. */
  messaging: boolean;
}

/** The agent columns are null when no agent row holds the token. */
interface CredentialRow {
  human_hash: string | null;
  messaging: string | null;
  id: string | null;
  label: string | null;
  revoked: number | null;
}

/**
 * The credential and the account switch in ONE statement: the human token's hash, the agent row
 * the token names (if any), and whether messaging is on. One round trip per request, which on
 * PostgreSQL is one network hop (test/integration/cluster/round-trips.test.ts counts them).
 */
const credential = (q: Sql, hash: string): Promise<CredentialRow | null> =>
  q.get<CredentialRow>(
    `SELECT (SELECT value FROM meta WHERE key = 'human_token_hash') AS human_hash,
            (SELECT value FROM meta WHERE key = 'agent_messaging') AS messaging,
            a.id, a.label, a.revoked
       FROM (SELECT 1 AS one) AS q LEFT JOIN agents AS a ON a.token_hash = CAST(? AS TEXT)`,
    hash,
  );

/**
 * Resolve `Authorization: Bearer <token>`; missing, unknown or revoked is 401 (§0). A token let in
 * lately is answered from `core.credentials` without a statement (bounded, and forgotten on every
 * instance when any credential or the switch changes: credentials.ts); otherwise read through
 * `read`, the request's store.
 */
export async function authenticate(core: HubCore, read: Sql, req: IncomingMessage): Promise<Answer<Authenticated>> {
  const hash = presentedHash(req);
  if (hash === null) return bad(401, 'unauthorized', 'send the credential as "Authorization: Bearer <token>"');
  const known = core.credentials.get(hash);
  if (known !== undefined) return good(known);
  const since = core.credentials.begin();
  const who = await lookUp(core, read, hash);
  if (who.ok) core.credentials.remember(hash, who.value, since);
  return who;
}

/** The hash of the token in `Authorization: Bearer <token>`; null when the header is missing or not of that form. */
export function presentedHash(req: IncomingMessage): string | null {
  const header = req.headers.authorization;
  const m = header === undefined ? null : /^Bearer\s+(\S+)\s*$/i.exec(header);
  return m ? presentedTokenHash(m[1]!) : null;
}

/**
 * The id of the agent whose token hashes to the parameter, as a sub-select, when {@link authenticate}
 * would let that token in to a messaging route: an agent row not revoked, not the human token, and
 * agent messaging not switched off. Null otherwise (and for a token only the configured token store
 * names: it has no row). The same three rows as the credential statement, so a statement that
 * decides on it (the stream connect's renewal) lets in exactly who the credential statement would,
 * on the store's rows of that instant: nothing remembered (credentials.ts), so a change committed
 * before it is never missed. `tokenHash` is the token's hash as SQL (a column of the batched connects' requests).
 */
export const agentLetIn = (tokenHash: string): string => `(SELECT a.id FROM agents AS a WHERE a.token_hash = ${tokenHash} AND a.revoked = 0
    AND NOT EXISTS (SELECT 1 FROM meta WHERE key = 'agent_messaging' AND value = '0')
    AND NOT EXISTS (SELECT 1 FROM meta WHERE key = 'human_token_hash' AND value = a.token_hash))`;
/** {@link agentLetIn} of a parameter. */
export const AGENT_LET_IN = agentLetIn('CAST(? AS TEXT)');

async function lookUp(core: HubCore, read: Sql, hash: string): Promise<Answer<Authenticated>> {
  const row = await credential(read, hash);
  const messaging = row?.messaging !== '0';
  if (row !== null && hash === row.human_hash) return good({ caller: { kind: 'human' }, messaging });
  // A token named only by the configured token store has no row: looked up there.
  const agent =
    row !== null && row.id !== null ? fromAgentRow({ id: row.id, label: row.label ?? '', revoked: row.revoked ?? 0 }) : await agentByToken(core, read, hash);
  if (!agent) return bad(401, 'unauthorized', 'the token is not known to this Hub');
  if (agent.revoked) return bad(401, 'unauthorized', `agent ${agent.id} has been revoked; a human must mint a new agent`);
  return good({ caller: { kind: 'agent', agentId: agent.id, label: agent.label, source: agent.source }, messaging });
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

/** The Hub's ids (ids.ts newId: a prefix, `_`, 24 hex digits); tokens it mints start `ohh_`. */
const HUB_ID = /^[a-z]{2,8}_[0-9a-f]{24}$/;

/** Query parameters that carry a credential by name; a token is never put in a URL (§0). */
const TOKEN_PARAMS = new Set(['token', 'access_token', 'bearer', 'authorization', 'auth', 'api_key', 'apikey']);

/** True when the query string carries a credential: by parameter name, or a value that is a live token. */
export async function tokenInUrl(core: HubCore, read: Sql, url: URL): Promise<boolean> {
  for (const [name, value] of url.searchParams) {
    if (TOKEN_PARAMS.has(name.toLowerCase())) return true;
    if (value.length >= 16) {
      // One of the Hub's own ids (every stream names its session so) is no token: no round trip,
      // and no hash either unless a configured token (any text) might look like one.
      const ownId = HUB_ID.test(value);
      if (ownId && core.configAgents.size === 0) continue;
      const hash = hashToken(value);
      if (core.configAgents.has(hash)) return true;
      if (ownId) continue;
      const row = await credential(read, hash);
      if (row !== null && (row.human_hash === hash || row.id !== null)) return true;
    }
  }
  return false;
}
