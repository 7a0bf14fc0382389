import {
  checkExistingPolicy,
  parseHubUrl,
  requireHubUrl,
  resolveAgentCredential,
  resolveHumanCredential,
  updateCredentials,
  writeHubUrlIfAbsent,
  type HubCredentials,
} from '../../../config/index.js';
import type { CliIO } from '../../io.js';
import { type Outcome, success, toOutcome, usageError } from '../../../core/index.js';
import {
  canPrompt,
  envOutranksNote,
  loadSettings,
  policyJson,
  printJson,
  promptLine,
  readToken,
  say,
  storeToken,
  whoami,
  writePolicy,
  type StoredIdentity,
} from '../../account/index.js';

export interface SetupOptions {
  hub?: string;
  tokenStdin?: boolean;
  agent?: string;
  json?: boolean;
  /** Declared only to refuse it. */
  token?: string;
}

/** Where an agent credential resolves from, or null when none does; several stored ones count (--agent picks later). */
function agentCredential(io: CliIO, hubUrl: string, agent: string | undefined): string | null {
  const r = resolveAgentCredential({ env: io.env, hubUrl, ...(agent === undefined ? {} : { agent }) });
  if (r.ok) return `agent credential from ${r.value.source}`;
  return r.error.code === 'several_agents' ? 'several agent credentials' : null;
}

const NEXT = 'next: run `oh-hai bridge` as a background task — and re-run it after every exit.';

/**
 * `oh-hai setup`: the first-run path — the Hub URL, a login, the sender policy, and the next
 * command. Non-interactive with `--hub URL --token-stdin`; without a terminal it never
 * prompts and names the flag to pass instead. The never-widen check runs before anything
 * reaches the Hub.
 */
export async function runSetup(opts: SetupOptions, io: CliIO): Promise<Outcome> {
  if (opts.token !== undefined) return tokenFlagRefusal('oh-hai setup --hub <url>');
  // The never-widen check before anything reaches the Hub: a user config that cannot be read
  // stops here. writePolicy re-runs it (under the lock) right before it would write.
  const check = checkExistingPolicy(io.env);
  if (!check.ok) return toOutcome(check.error);
  const settings = loadSettings(io, opts.hub);
  if (!settings.ok) return toOutcome(settings.error);

  let hubUrl = settings.value.hubUrl;
  let record = settings.value.hubUrlSource === 'flag' || settings.value.hubUrlSource === 'env';
  if (hubUrl === null) {
    if (!canPrompt(io))
      return usageError(
        'no Hub URL and no terminal to ask on: pass it with --hub <url> (e.g. oh-hai setup --hub https://hub.example.com --token-stdin < token-file)',
        'no_hub_url',
      );
    const typed = await promptLine(io, 'Hub URL (e.g. https://hub.example.com): ');
    if (!typed.ok) return toOutcome(typed.error);
    const parsed = parseHubUrl(typed.value, 'the Hub URL typed');
    if (!parsed.ok) return toOutcome(parsed.error);
    [hubUrl, record] = [parsed.value, true];
  }
  const userHub = settings.value.userHubUrl;
  if (record && userHub !== null && userHub !== hubUrl)
    return usageError(
      `your user config already names the Hub ${userHub}, not ${hubUrl}; edit [hub] url there by hand to switch Hubs, then re-run oh-hai setup`,
      'hub_url_differs',
    );

  let identity: StoredIdentity | null = null;
  let hubUrlWritten = false;
  const human = resolveHumanCredential({ env: io.env, hubUrl });
  const agent = agentCredential(io, hubUrl, opts.agent);
  if (opts.tokenStdin || (!human.ok && agent === null)) {
    const token = await readToken(io, {
      tokenStdin: opts.tokenStdin === true,
      command: `oh-hai setup --hub ${hubUrl}`,
      what: "your agent token (or the account's human token)",
    });
    if (!token.ok) return toOutcome(token.error);
    const who = await whoami(hubUrl, token.value);
    if (!who.ok) return toOutcome(who.error);
    const stored = await storeToken(io.env, hubUrl, who.value, token.value);
    if (!stored.ok) return toOutcome(stored.error);
    say(io, stored.value.lines);
    identity = stored.value.identity;
  } else {
    say(io, [`already logged in to ${hubUrl} (${agent ?? "the account's human token"}); not asking for a token.`]);
  }

  if (record) {
    const wrote = await writeHubUrlIfAbsent(io.env, hubUrl);
    if (!wrote.ok) return toOutcome(wrote.error);
    if (wrote.value === 'written') say(io, [`wrote [hub] url = "${hubUrl}" to your user config.`]);
    hubUrlWritten = wrote.value === 'written';
  }

  const policy = await writePolicy(io, hubUrl, 'setup', opts.agent);
  if (!policy.ok) return toOutcome(policy.error);

  const agentCredentialNow = agentCredential(io, hubUrl, opts.agent) !== null;
  if (!agentCredentialNow)
    say(io, [
      `the bridge needs an agent token for ${hubUrl}: oh-hai login --hub ${hubUrl} --token-stdin < agent-token-file (or export OH_HAI_TOKEN=<agent token>).`,
    ]);
  say(io, [...envOutranksNote(io.env), NEXT]);
  if (opts.json)
    await printJson(io, { hub: hubUrl, identity, hub_url_written: hubUrlWritten, policy: policyJson(policy.value), agent_credential: agentCredentialNow });
  return success();
}

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
export async function runLogin(opts: LoginOptions, io: CliIO): Promise<Outcome> {
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

export interface LogoutOptions {
  hub?: string;
  human?: boolean;
  agent?: string;
}

/**
 * `oh-hai logout [--hub URL] [--human] [--agent <id>]`: forget stored tokens. With neither
 * --human nor --agent it forgets everything stored for the Hub; with no Hub configured at
 * all, everything stored for every Hub. Local only: the Hub still honours a token until it
 * is revoked there, and the command says so.
 */
export async function runLogout(opts: LogoutOptions, io: CliIO): Promise<Outcome> {
  const settings = loadSettings(io, opts.hub);
  if (!settings.ok) return toOutcome(settings.error);
  const hubUrl = settings.value.hubUrl;
  const everything = !opts.human && opts.agent === undefined;
  const removed: string[] = [];
  const forget = (h: HubCredentials) => {
    if ((opts.human || everything) && h.human) {
      removed.push(`the human token of account ${h.human.account_id} for ${h.hub}`);
      h.human = null;
    }
    for (const a of h.agents.filter((a) => everything || a.id === opts.agent)) removed.push(`the agent token of ${a.id} for ${h.hub}`);
    h.agents = h.agents.filter((a) => !(everything || a.id === opts.agent));
  };
  const updated = await updateCredentials(io.env, (file) => file.hubs.filter((h) => hubUrl === null || h.hub === hubUrl).forEach(forget));
  if (!updated.ok) return toOutcome(updated.error);
  const scope = hubUrl ?? 'any Hub';
  if (removed.length === 0) {
    const what = everything
      ? 'no credentials'
      : [opts.human ? 'no human token' : null, opts.agent === undefined ? null : `no token for agent ${opts.agent}`].filter(Boolean).join(' and ');
    say(io, [`${what} stored for ${scope} in ${updated.value.path}; nothing removed.`]);
  } else {
    say(io, [
      ...removed.map((r) => `removed ${r} from ${updated.value.path}.`),
      'This is local only: the Hub keeps honouring a token until it is revoked there.',
    ]);
  }
  say(
    io,
    envOutranksNote(io.env).map((n) => `${n} It is not affected by logout.`),
  );
  return success();
}

export interface UpgradeOptions {
  hub?: string;
  agent?: string;
}

/**
 * `oh-hai upgrade`: the migration path. For now it writes the sender policy when none exists.
 * The never-widen check is the first thing it does: with a policy in place it says so and
 * stops, needing no Hub URL, no credential and no Hub call.
 */
export async function runUpgrade(opts: UpgradeOptions, io: CliIO): Promise<Outcome> {
  const check = checkExistingPolicy(io.env);
  if (!check.ok) return toOutcome(check.error);
  if (check.value.exists) {
    say(io, check.value.lines);
    return success();
  }
  const settings = loadSettings(io, opts.hub);
  if (!settings.ok) return toOutcome(settings.error);
  const hubUrl = requireHubUrl(settings.value);
  if (!hubUrl.ok) return toOutcome(hubUrl.error);
  const policy = await writePolicy(io, hubUrl.value, 'upgrade', opts.agent);
  return policy.ok ? success() : toOutcome(policy.error);
}
