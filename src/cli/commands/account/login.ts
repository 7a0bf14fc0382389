import { checkExistingPolicy, requireHubUrl } from '../../../config/index.js';
import type { CliIO } from '../../io.js';
import { type Outcome, success, toOutcome, usageError } from '../../../core/index.js';
import { envOutranksNote, loadSettings, policyJson, printJson, say, storeToken, writePolicy } from './common.js';
import { whoami } from './hub-access.js';
import { readToken } from './token-input.js';

export interface LoginOptions {
  hub?: string;
  tokenStdin?: boolean;
  human?: boolean;
  json?: boolean;
  /** Declared only to refuse it: a token as a flag value is already in shell history. */
  token?: string;
}

export const tokenFlagRefusal = (command: string): Outcome =>
  usageError(
    `a token is never taken as a flag value — it lands in shell history and in every process listing. Treat that token as exposed and rotate it; then pass the new one on stdin: ${command} --token-stdin < token-file`,
    'token_in_argv',
  );

/**
 * `oh-hai login [--human] [--hub URL] [--token-stdin]`: verify a token with GET /v1/whoami and
 * store it. `--human` stores the account's human token and then writes the sender policy
 * when none exists — the never-widen check runs before the first Hub call.
 */
export async function run(opts: LoginOptions, io: CliIO): Promise<Outcome> {
  const command = opts.human ? 'oh-hai login --human' : 'oh-hai login';
  if (opts.token !== undefined) return tokenFlagRefusal(command);
  if (opts.human) {
    // The never-widen check precedes the first Hub call; writePolicy re-runs it under the lock.
    const check = checkExistingPolicy(io.env);
    if (!check.ok) return toOutcome(check.error);
  }
  const settings = loadSettings(io, opts.hub);
  if (!settings.ok) return toOutcome(settings.error);
  const hubUrl = requireHubUrl(settings.value);
  if (!hubUrl.ok) return toOutcome(hubUrl.error);

  const token = await readToken(io, { tokenStdin: opts.tokenStdin === true, command, what: opts.human ? "the account's human token" : 'the agent token' });
  if (!token.ok) return toOutcome(token.error);
  const who = await whoami(hubUrl.value, token.value);
  if (!who.ok) return toOutcome(who.error);
  if (opts.human && who.value.kind !== 'human')
    return usageError(
      `that is an agent token (agent ${who.value.agent.id}), not the account's human token; to store it, run oh-hai login --token-stdin without --human`,
      'not_a_human_token',
    );
  if (!opts.human && who.value.kind !== 'agent')
    return usageError(
      "that is the account's human token; to store it as such (and write the sender policy), run oh-hai login --human --token-stdin",
      'not_an_agent_token',
    );

  const stored = await storeToken(io.env, hubUrl.value, who.value, token.value);
  if (!stored.ok) return toOutcome(stored.error);
  say(io, stored.value.lines);
  const identity = stored.value.identity;
  if (!opts.human) {
    say(io, envOutranksNote(io.env));
    if (opts.json) await printJson(io, { hub: hubUrl.value, identity, policy: null });
    return success();
  }
  const policy = await writePolicy(io, hubUrl.value, 'login --human', undefined);
  if (!policy.ok) return toOutcome(policy.error);
  if (opts.json) await printJson(io, { hub: hubUrl.value, identity, policy: policyJson(policy.value) });
  return success();
}
