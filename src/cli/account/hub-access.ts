import { DEFAULT_AGENT_DIRECTORY, HubClient, type HubFailure } from '../../hub/client/index.js';
import { agentDirectoryPath, type Whoami } from '../../hub/contract/index.js';
import type { DirectoryFetch } from '../../config/index.js';
import { type Coded, EXIT, type CodedError } from '../../core/index.js';

/**
 * A Hub failure as the account commands report it: a refused credential is 3, anything else
 * about reaching the Hub 13. `at` names the request; `after` says what it means for the command.
 */
export function hubError(hubUrl: string, at: string, f: HubFailure, after: string): CodedError {
  if (f.kind === 'http' && (f.status === 401 || f.status === 403))
    return {
      code: f.code,
      exit: EXIT.auth,
      message: `${hubUrl} refused the token at ${at} (${f.status} ${f.code}: ${f.message}); check it is current and of the right kind — ${after}`,
    };
  // A network failure's message already names the request (`GET /v1/whoami: connect ECONNREFUSED …`).
  const detail = f.kind === 'network' ? f.message : `${at}: ${f.kind === 'http' ? `${f.status} ${f.code}: ` : ''}${f.message}`;
  return {
    code: f.kind === 'http' ? f.code : `hub_${f.kind}`,
    exit: EXIT.unreachable,
    message: `could not reach a usable Hub at ${hubUrl} (${detail}); check the URL and retry — ${after}`,
  };
}

const NO_POLICY = 'no sender policy was written';

async function withClient<T>(hubUrl: string, token: string, fn: (c: HubClient) => Promise<T>): Promise<T> {
  const client = new HubClient({ baseUrl: hubUrl, token });
  try {
    return await fn(client);
  } finally {
    await client.close();
  }
}

/** GET /v1/whoami with this token: verifies it before anything is stored, and says whose it is. */
export function whoami(hubUrl: string, token: string): Promise<Coded<Whoami>> {
  return withClient(hubUrl, token, async (c) => {
    const r = await c.whoami();
    return r.ok ? { ok: true, value: r.value } : { ok: false, error: hubError(hubUrl, 'GET /v1/whoami', r.failure, 'nothing was stored') };
  });
}

/**
 * The account's agents for the policy writer. A human token reads the directory (the
 * advertised path, else the MA2H default). An agent token may read it only where the Hub
 * advertises `account.agent_directory`, and then asks for config-token identities too.
 */
export function fetchDirectory(hubUrl: string, cred: { kind: 'human' | 'agent'; token: string }): Promise<DirectoryFetch> {
  return withClient(hubUrl, cred.token, async (c): Promise<DirectoryFetch> => {
    const cap = await c.capability();
    if (!cap.ok) return { kind: 'failed', error: hubError(hubUrl, 'GET /v1/capability', cap.failure, NO_POLICY) };
    const path = agentDirectoryPath(cap.value);
    if (cred.kind === 'agent' && path === null) return { kind: 'no-directory' };
    const rows = await c.listAgents({ includeConfig: cred.kind === 'agent', ...(path === null ? {} : { path }) });
    if (!rows.ok) return { kind: 'failed', error: hubError(hubUrl, `GET ${path ?? DEFAULT_AGENT_DIRECTORY}`, rows.failure, NO_POLICY) };
    return { kind: 'directory', rows: rows.value, via: cred.kind === 'human' ? 'human token' : 'agent token' };
  });
}
