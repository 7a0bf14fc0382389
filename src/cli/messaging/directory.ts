import { readFileSync } from 'node:fs';
import path from 'node:path';
import { EXIT, type Coded } from '../../core/index.js';
import { agentDirectoryPath, parseAgents, type AgentRow } from '../../hub/contract/index.js';
import { stateKey } from '../../spool/index.js';
import { ensureDir, writeFileAtomic } from '../../util/fs-durable.js';
import type { AgentAccess } from './access.js';
import { hubFailureError } from './failures.js';
import { failureContext } from './send.js';

/**
 * The account's agent directory (MA2H §10), read with this agent's own token, and the cache
 * of it that lets summary lines print a sender's label without a Hub call.
 *
 * Where the lookup may happen (docs/messaging.md "Names"): only in a command that already
 * talks to the Hub and was given a name (send/ask/task to a label), or one whose job is the
 * directory (`fleet ls`). Each fetch rewrites the cache; everything that only *prints* labels
 * (messages list/show, the bridge's summary lines) reads the cache and never fetches, so the
 * bridge's warm path gains no round trip. A cache that is missing or unreadable prints ids
 * alone — labels are a convenience, never needed to act.
 */

/** `<state root>/oh-hai/directory/<key>.json`, one per Hub and agent identity, 0600 in a 0700 folder. */
export const directoryCacheFile = (root: string, hubUrl: string, agentId: string): string =>
  path.join(root, 'oh-hai', 'directory', `${stateKey(hubUrl, agentId, 'directory')}.json`);

/** GET the advertised directory (capability first: a Hub may serve it elsewhere, or not at all), then refresh the cache. */
export async function fetchAgentDirectory(a: AgentAccess, nowIso: string, doing: string): Promise<Coded<AgentRow[]>> {
  const cap = await a.client.capability();
  if (!cap.ok) return { ok: false, error: hubFailureError(cap.failure, failureContext(a, `${doing} (GET /v1/capability)`)) };
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
  if (!rows.ok) return { ok: false, error: hubFailureError(rows.failure, failureContext(a, `${doing} (GET ${dir})`)) };
  writeDirectoryCache(a, rows.value, nowIso);
  return rows;
}

/** Best effort: a cache that cannot be written only costs labels in later summaries. */
function writeDirectoryCache(a: AgentAccess, rows: readonly AgentRow[], nowIso: string): void {
  const file = directoryCacheFile(a.stateRoot, a.hubUrl, a.agentId);
  try {
    ensureDir(path.dirname(path.dirname(file)));
    ensureDir(path.dirname(file));
    writeFileAtomic(file, JSON.stringify({ fetched_at: nowIso, agents: rows }) + '\n', 0o600, false);
  } catch {
    // Read-only or full state root: the send itself already succeeded or will; labels are optional.
  }
}

/** Agent id → label from the cache; empty when there is none (never an error: see above). */
export function readDirectoryCache(root: string, hubUrl: string, agentId: string): ReadonlyMap<string, string> {
  let text: string;
  try {
    text = readFileSync(directoryCacheFile(root, hubUrl, agentId), 'utf8');
  } catch {
    return new Map();
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return new Map();
  }
  const rows = parseAgents(json);
  if (!rows.ok) return new Map();
  return new Map(rows.value.filter((r) => r.label !== null).map((r) => [r.id, r.label!]));
}

/** `agent:<id>[#sess]` → the label the cache knows for that agent, else null; `human:…` and anything else → null. */
export function labelFor(labels: ReadonlyMap<string, string>, address: string): string | null {
  if (!address.startsWith('agent:')) return null;
  const rest = address.slice('agent:'.length);
  const hash = rest.indexOf('#');
  return labels.get(hash < 0 ? rest : rest.slice(0, hash)) ?? null;
}

/** `agent:agt_1 (reviewer)` when the label is known, else the address alone. */
export const withLabel = (labels: ReadonlyMap<string, string>, address: string): string => {
  const label = labelFor(labels, address);
  return label === null ? address : `${address} (${label})`;
};
