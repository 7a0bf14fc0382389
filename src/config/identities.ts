import { readFileSync } from 'node:fs';
import path from 'node:path';
import { ensureDir, writeFileAtomic } from '../util/fs-durable.js';
import { withFileLock } from './file-lock.js';
import { identitiesPath } from './paths.js';
import { sha256Hex } from '../util/sha256.js';

/**
 * The OH_HAI_TOKEN → agent id cache. A bare token carries no agent id, and the bridge's warm
 * path must not call the Hub to learn it, so the id learned once from GET /v1/whoami is kept
 * under a hash of (Hub origin, token). The file holds hashes and ids, never a token.
 */
export const identityKey = (hubUrl: string, token: string): string => sha256Hex(`${hubUrl}\n${token}`);

type IdentityMap = Record<string, string>;

// A cache: a damaged or unreadable file costs one whoami, so it reads as empty.
function readMap(file: string): IdentityMap {
  try {
    const v: unknown = JSON.parse(readFileSync(file, 'utf8'));
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return {};
    const ids = (v as { ids?: unknown }).ids;
    if (ids === null || typeof ids !== 'object' || Array.isArray(ids)) return {};
    return Object.fromEntries(Object.entries(ids).filter((e): e is [string, string] => typeof e[1] === 'string'));
  } catch {
    return {};
  }
}

export function lookupCachedAgentId({ stateRoot, hubUrl, token }: { stateRoot: string; hubUrl: string; token: string }): string | null {
  return readMap(identitiesPath(stateRoot))[identityKey(hubUrl, token)] ?? null;
}

export async function rememberAgentId({
  stateRoot,
  hubUrl,
  token,
  agentId,
}: {
  stateRoot: string;
  hubUrl: string;
  token: string;
  agentId: string;
}): Promise<void> {
  const file = identitiesPath(stateRoot);
  ensureDir(path.dirname(file), 0o700);
  await withFileLock(file, () => {
    const ids = readMap(file);
    const key = identityKey(hubUrl, token);
    if (ids[key] === agentId) return;
    ids[key] = agentId;
    writeFileAtomic(file, JSON.stringify({ version: 1, ids }, null, 2) + '\n', 0o600);
  });
}
