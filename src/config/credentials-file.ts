import { chmodSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { ensureDir, writeFileAtomic } from '../util/fs-durable.js';
import { type Coded, authFailure, done } from '../core/index.js';
import { withFileLock } from './file-lock.js';
import { credentialsPath } from './paths.js';

export interface StoredAgent {
  id: string;
  label: string | null;
  token: string;
}

export interface StoredHuman {
  account_id: string;
  token: string;
}

/** Everything stored for one Hub origin. */
export interface HubCredentials {
  hub: string;
  agents: StoredAgent[];
  human: StoredHuman | null;
}

/** `credentials.json`: one element per Hub origin, so logging in to a second Hub keeps the first. */
export interface CredentialsFile {
  version: 1;
  hubs: HubCredentials[];
}

const emptyFile = (): CredentialsFile => ({ version: 1, hubs: [] });

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);
const isString = (v: unknown): v is string => typeof v === 'string' && v.length > 0;

function parseAgent(v: unknown): StoredAgent | null {
  if (!isObject(v) || !isString(v.id) || !isString(v.token) || !(v.label === null || typeof v.label === 'string')) return null;
  return { id: v.id, label: v.label, token: v.token };
}

function parseHuman(v: unknown): StoredHuman | null | undefined {
  if (v === null) return null;
  if (!isObject(v) || !isString(v.account_id) || !isString(v.token)) return undefined;
  return { account_id: v.account_id, token: v.token };
}

function parseHub(v: unknown): HubCredentials | null {
  if (!isObject(v) || !isString(v.hub) || !Array.isArray(v.agents)) return null;
  const agents = v.agents.map(parseAgent);
  const human = parseHuman(v.human);
  if (agents.some((a) => a === null) || human === undefined) return null;
  return { hub: v.hub, agents: agents as StoredAgent[], human };
}

/** Validate the parsed JSON; the reason never quotes the content, which holds tokens. */
function parseCredentials(v: unknown): CredentialsFile | null {
  if (!isObject(v) || v.version !== 1 || !Array.isArray(v.hubs)) return null;
  const hubs = v.hubs.map(parseHub);
  if (hubs.some((h) => h === null)) return null;
  return { version: 1, hubs: hubs as HubCredentials[] };
}

export interface CredentialsRead {
  file: CredentialsFile;
  path: string;
  warnings: string[];
}

/**
 * Read the credentials file (absent = nothing stored). A file group or others can read is
 * narrowed to 0600 and reported. A damaged file is exit 3: no credential resolves from it,
 * and a person must fix it. JSON.parse's own message is never shown: it quotes the input.
 */
export function readCredentials(env: NodeJS.ProcessEnv): Coded<CredentialsRead> {
  const file = credentialsPath(env);
  const warnings: string[] = [];
  let text: string;
  try {
    const mode = statSync(file).mode & 0o777;
    if (mode & 0o077) {
      chmodSync(file, 0o600);
      warnings.push(`${file} was readable by others (mode ${mode.toString(8)}); narrowed it to 600 — rotate the tokens in it if this machine is shared`);
    }
    text = readFileSync(file, 'utf8');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return done({ file: emptyFile(), path: file, warnings });
    return authFailure('credentials_unreadable', `cannot read ${file} (${code ?? 'error'}); fix its permissions (it must be yours, mode 600)`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  const parsed = parseCredentials(json);
  if (!parsed)
    return authFailure(
      'credentials_damaged',
      `${file} is not a valid oh-hai credentials file; move it aside and log in again: oh-hai login --token-stdin < token-file`,
    );
  return done({ file: parsed, path: file, warnings });
}

export const credentialsForHub = (file: CredentialsFile, hub: string): HubCredentials | undefined => file.hubs.find((h) => h.hub === hub);

/**
 * Read-modify-write the credentials file under its lock, atomically, 0600 in a 0700 directory.
 * `change` gets a copy it may mutate; an element left with nothing in it is dropped, and an
 * unchanged file is not rewritten.
 */
export async function updateCredentials(env: NodeJS.ProcessEnv, change: (file: CredentialsFile) => void): Promise<Coded<CredentialsRead>> {
  const file = credentialsPath(env);
  ensureDir(path.dirname(file), 0o700);
  chmodSync(path.dirname(file), 0o700);
  return withFileLock(file, () => {
    const current = readCredentials(env);
    if (!current.ok) return current;
    const next = structuredClone(current.value.file);
    change(next);
    next.hubs = next.hubs.filter((h) => h.agents.length > 0 || h.human !== null);
    if (JSON.stringify(next) !== JSON.stringify(current.value.file)) writeFileAtomic(file, JSON.stringify(next, null, 2) + '\n', 0o600);
    return done({ file: next, path: file, warnings: current.value.warnings });
  });
}
