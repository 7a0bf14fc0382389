import { checkExistingPolicy, parseHubUrl, resolveAgentCredential, resolveHumanCredential, writeHubUrlIfAbsent } from '../../../config/index.js';
import type { CliIO } from '../../io.js';
import { type Outcome, success, toOutcome, usageError } from '../../../core/index.js';
import { envOutranksNote, loadSettings, policyJson, printJson, say, storeToken, writePolicy, type StoredIdentity } from './common.js';
import { whoami } from './hub-access.js';
import { tokenFlagRefusal } from './login.js';
import { canPrompt, promptLine, readToken } from './token-input.js';

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
export async function run(opts: SetupOptions, io: CliIO): Promise<Outcome> {
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
