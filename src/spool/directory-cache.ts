import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parseAgents, type AgentRow } from '../hub/contract/index.js';
import { ensureDir, writeFileAtomic } from '../util/fs-durable.js';
import { FileMemo } from './file-memo.js';
import { stateKey } from './paths.js';

/**
 * The local copy of the account's agent directory (MA2H §10), one file per Hub and agent
 * identity: `<state root>/oh-hai/directory/<key>.json`, 0600 in a 0700 folder. Commands that
 * fetch the directory (a send to a name, `fleet ls`) rewrite it; what only prints or checks
 * names reads it and never fetches — the bridge's summary lines, `messages list/show`, an
 * `--allow-from` label (docs/messaging.md "Names"). It lives here, below the CLI, so the
 * reader can read it without the Hub client.
 */

/** Whose directory: the Hub and the agent identity that read it, under one state root. */
export interface DirectoryCacheKey {
  stateRoot: string;
  hubUrl: string;
  agentId: string;
}

export const directoryCacheFile = (k: DirectoryCacheKey): string =>
  path.join(k.stateRoot, 'oh-hai', 'directory', `${stateKey(k.hubUrl, k.agentId, 'directory')}.json`);

/** Best effort: a cache that cannot be written only costs labels later (the fetch that called it already has its rows). */
export function writeDirectoryCache(k: DirectoryCacheKey, rows: readonly AgentRow[], nowIso: string): void {
  const file = directoryCacheFile(k);
  try {
    ensureDir(path.dirname(path.dirname(file)));
    ensureDir(path.dirname(file));
    writeFileAtomic(file, JSON.stringify({ fetched_at: nowIso, agents: rows }) + '\n', 0o600, 'none');
  } catch {
    // A read-only or full state root: labels are a convenience, never needed to act.
  }
}

/** The cached rows; null when there is no cache or it cannot be read as a directory (never an error). */
export function readDirectoryCache(k: DirectoryCacheKey): AgentRow[] | null {
  try {
    return directoryRows(readFileSync(directoryCacheFile(k), 'utf8'));
  } catch {
    return null;
  }
}

/** The rows of a cache file's text; null when it is not a directory. */
function directoryRows(text: string): AgentRow[] | null {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return null;
  }
  // `{fetched_at, agents}`: the directory's own body, plus when it was read.
  const rows = parseAgents(json);
  return rows.ok ? rows.value : null;
}

/** Agent id → label, from the cache; empty when there is none (summary lines then print ids alone). */
export function cachedLabels(k: DirectoryCacheKey): ReadonlyMap<string, string> {
  return labelsOf(readDirectoryCache(k));
}

/** The cache's labels, read again only when the file changed (a reader that prints more than once); the caller closes it. */
export function cachedLabelsMemo(k: DirectoryCacheKey): FileMemo<ReadonlyMap<string, string>> {
  return new FileMemo(directoryCacheFile(k), (got) => labelsOf(got.state === 'read' ? directoryRows(got.bytes.toString('utf8')) : null));
}

const labelsOf = (rows: readonly AgentRow[] | null): ReadonlyMap<string, string> =>
  new Map((rows ?? []).filter((r) => r.label !== null).map((r) => [r.id, r.label!]));
