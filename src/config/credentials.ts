import { type Coded, authFailure, done, usageFailure } from '../core/index.js';
import { credentialsForHub, readCredentials } from './credentials-file.js';
import { lookupCachedAgentId } from './identities.js';
import { badAgentIdReason } from './ids.js';

export type CredentialSource = 'OH_HAI_TOKEN' | 'MA2H_AGENT_TOKENS' | 'credentials';

export interface AgentCredential {
  token: string;
  /** Known from the credential itself, or for OH_HAI_TOKEN from the identity cache; null = ask GET /v1/whoami. */
  agentId: string | null;
  label: string | null;
  source: CredentialSource;
  /** E.g. a credentials file whose mode was narrowed; for the caller to print. */
  warnings: string[];
}

export interface HumanCredential {
  token: string;
  accountId: string;
  warnings: string[];
}

const MAX_TOKEN_LENGTH = 4096;

/** Why a string cannot be a bearer token, or null. Never quotes it. */
export function badTokenReason(token: string): string | null {
  if (token.length === 0) return 'it is empty';
  if (/[\s\u0000-\u001f\u007f]/u.test(token)) return 'it contains whitespace or a control character (one token, nothing else)';
  if (token.length > MAX_TOKEN_LENGTH) return `it is longer than ${MAX_TOKEN_LENGTH} characters`;
  return null;
}

/**
 * The environment variable whose token `resolveAgentCredential` would present, or null when
 * the environment holds none (then only `credentials.json`, keyed by Hub, can supply one).
 */
export function environmentCredential(env: NodeJS.ProcessEnv): 'OH_HAI_TOKEN' | 'MA2H_AGENT_TOKENS' | null {
  if (env.OH_HAI_TOKEN !== undefined && env.OH_HAI_TOKEN !== '') return 'OH_HAI_TOKEN';
  if (env.MA2H_AGENT_TOKENS !== undefined && env.MA2H_AGENT_TOKENS.trim() !== '') return 'MA2H_AGENT_TOKENS';
  return null;
}

const loginFix = (hubUrl: string) => `oh-hai login --hub ${hubUrl} --token-stdin < token-file`;

/** MA2H allows `,` and `=` in agent ids; this variable's format cannot carry them (docs/conformance.md finding 2). */
const AGENT_TOKENS_LIMIT = 'an agent id containing "," or "=" cannot be written in MA2H_AGENT_TOKENS: give its token with OH_HAI_TOKEN or oh-hai login instead';

/**
 * `MA2H_AGENT_TOKENS`: comma-separated `<agent_id>=<token>` pairs (split at the first `=`,
 * so a token may contain `=`; spaces around a pair are ignored). Errors name the pair by
 * position and never quote a token.
 */
export function parseAgentTokens(raw: string): Coded<{ id: string; token: string }[]> {
  const pairs: { id: string; token: string }[] = [];
  const parts = raw.split(',').map((p) => p.trim());
  for (const [i, part] of parts.entries()) {
    const where = `MA2H_AGENT_TOKENS pair ${i + 1} of ${parts.length}`;
    const eq = part.indexOf('=');
    const id = eq === -1 ? '' : part.slice(0, eq);
    const token = eq === -1 ? '' : part.slice(eq + 1);
    if (eq <= 0)
      return usageFailure('invalid_agent_tokens', `${where} is not <agent_id>=<token>; the format is agt_a=TOKEN_A,agt_b=TOKEN_B (${AGENT_TOKENS_LIMIT})`);
    const idProblem = badAgentIdReason(id);
    if (idProblem) return usageFailure('invalid_agent_tokens', `${where}: the agent id is unusable because ${idProblem}`);
    const problem = badTokenReason(token);
    if (problem) return usageFailure('invalid_agent_tokens', `${where} (agent ${id}): the token is unusable because ${problem}`);
    const dup = pairs.find((p) => p.id === id);
    if (dup && dup.token !== token) return usageFailure('invalid_agent_tokens', `${where}: agent ${id} appears twice with different tokens; keep one`);
    if (!dup) pairs.push({ id, token });
  }
  return done(pairs);
}

function pick<T extends { id: string }>(candidates: T[], agent: string | undefined, where: string): Coded<T> {
  if (agent !== undefined) {
    const found = candidates.find((c) => c.id === agent);
    if (found) return done(found);
    return usageFailure(
      'unknown_agent',
      `--agent ${agent} is not among the identities in ${where} (${candidates.map((c) => c.id).join(', ')}); pick one of those`,
    );
  }
  const only = candidates[0];
  if (candidates.length === 1 && only) return done(only);
  const limit = where === 'MA2H_AGENT_TOKENS' ? ` (${AGENT_TOKENS_LIMIT})` : '';
  return usageFailure('several_agents', `${where} holds several identities (${candidates.map((c) => c.id).join(', ')}); pick one with --agent <id>${limit}`);
}

/**
 * The agent token to present: OH_HAI_TOKEN (one token) > MA2H_AGENT_TOKENS (several;
 * `agent` picks) > the credentials file for this Hub (`agent` picks). Nothing at all is
 * exit 3 with the command that fixes it. The token never appears in any message.
 */
export function resolveAgentCredential({
  env,
  hubUrl,
  agent,
  stateRoot,
}: {
  env: NodeJS.ProcessEnv;
  hubUrl: string;
  agent?: string;
  /** When given, an OH_HAI_TOKEN's agent id is looked up in the identity cache. */
  stateRoot?: string;
}): Coded<AgentCredential> {
  const fromEnv = environmentCredential(env);
  const single = env.OH_HAI_TOKEN;
  if (fromEnv === 'OH_HAI_TOKEN' && single !== undefined) {
    const problem = badTokenReason(single);
    if (problem) return usageFailure('invalid_token', `OH_HAI_TOKEN is unusable because ${problem}`);
    const agentId = stateRoot === undefined ? null : lookupCachedAgentId({ stateRoot, hubUrl, token: single });
    if (agent !== undefined && agentId !== null && agentId !== agent)
      return usageFailure('unknown_agent', `--agent ${agent} names another identity than OH_HAI_TOKEN (agent ${agentId}); unset OH_HAI_TOKEN or drop --agent`);
    return done({ token: single, agentId, label: null, source: 'OH_HAI_TOKEN', warnings: [] });
  }
  const several = env.MA2H_AGENT_TOKENS;
  if (fromEnv === 'MA2H_AGENT_TOKENS' && several !== undefined) {
    const pairs = parseAgentTokens(several);
    if (!pairs.ok) return pairs;
    const chosen = pick(pairs.value, agent, 'MA2H_AGENT_TOKENS');
    if (!chosen.ok) return chosen;
    return done({ token: chosen.value.token, agentId: chosen.value.id, label: null, source: 'MA2H_AGENT_TOKENS', warnings: [] });
  }
  const read = readCredentials(env);
  if (!read.ok) return read;
  const stored = credentialsForHub(read.value.file, hubUrl)?.agents ?? [];
  if (stored.length === 0)
    return authFailure(
      'no_credential',
      `no agent credential for ${hubUrl}: store one with \`${loginFix(hubUrl)}\`, or export OH_HAI_TOKEN=<token> in the agent's environment`,
    );
  const chosen = pick(stored, agent, `${read.value.path} for ${hubUrl}`);
  if (!chosen.ok) return chosen;
  return done({ token: chosen.value.token, agentId: chosen.value.id, label: chosen.value.label, source: 'credentials', warnings: read.value.warnings });
}

/** The account's human token for this Hub, stored by `oh-hai login --human`; missing is exit 3 with the fix. */
export function resolveHumanCredential({ env, hubUrl }: { env: NodeJS.ProcessEnv; hubUrl: string }): Coded<HumanCredential> {
  const read = readCredentials(env);
  if (!read.ok) return read;
  const human = credentialsForHub(read.value.file, hubUrl)?.human;
  if (!human)
    return authFailure(
      'no_human_credential',
      `no human token for ${hubUrl}: store the account's human token with \`oh-hai login --human --hub ${hubUrl} --token-stdin < human-token-file\``,
    );
  return done({ token: human.token, accountId: human.account_id, warnings: read.value.warnings });
}
