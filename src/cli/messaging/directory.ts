import { EXIT, type Coded } from '../../core/index.js';
import { agentDirectoryPath, type AgentRow } from '../../hub/contract/index.js';
import { writeDirectoryCache } from '../../spool/index.js';
import type { AgentAccess } from './access.js';
import { hubFailureError } from './failures.js';
import { failureContext } from './send.js';

/**
 * The account's agent directory (MA2H §10), read with this agent's own token; each fetch
 * rewrites the cache (src/spool/directory-cache.ts) that lets summary lines print a sender's
 * label without a Hub call.
 *
 * Where the lookup may happen (docs/messaging.md "Names"): only in a command that already
 * talks to the Hub and was given a name (send/ask/task to a label), or one whose job is the
 * directory (`fleet ls`). Each fetch rewrites the cache; everything that only *prints* labels
 * (messages list/show, the bridge's summary lines) reads the cache and never fetches, so the
 * bridge's warm path gains no round trip. A cache that is missing or unreadable prints ids
 * alone — labels are a convenience, never needed to act.
 */

/** What a directory fetch needs: the client, whose directory it is, and the credential to name in a failure. */
export type DirectoryReader = Pick<AgentAccess, 'client' | 'hubUrl' | 'credential' | 'stateRoot' | 'agentId'>;

/** GET the advertised directory (capability first: a Hub may serve it elsewhere, or not at all), then refresh the cache. */
export async function fetchAgentDirectory(a: DirectoryReader, nowIso: string, doing: string): Promise<Coded<AgentRow[]>> {
  const cap = await a.client.capability();
  if (!cap.ok) return { ok: false, error: hubFailureError(cap.failure, failureContext(a, doing, 'GET /v1/capability')) };
  const dir = agentDirectoryPath(cap.value);
  if (dir === null) {
    return {
      ok: false,
      error: {
        code: 'no_agent_directory',
        exit: EXIT.usage,
        message: `this Hub advertises no agent directory (no account.agent_directory in its capability), so names cannot be looked up there; address the agent as agent:<id>`,
      },
    };
  }
  const rows = await a.client.listAgents({ includeConfig: true, path: dir });
  if (!rows.ok) return { ok: false, error: hubFailureError(rows.failure, failureContext(a, doing, `GET ${dir}`)) };
  writeDirectoryCache(a, rows.value, nowIso);
  return rows;
}
