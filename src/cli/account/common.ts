import type { Whoami } from '../../hub/contract/index.js';
import {
  type PolicyWriteResult,
  type ResolvedSettings,
  loadConfigFiles,
  resolveAgentCredential,
  resolveHumanCredential,
  resolveSettings,
  updateCredentials,
  writeAllowFromIfAbsent,
} from '../../config/index.js';
import { done, type Coded } from '../../core/index.js';
import type { CliIO } from '../io.js';
import { writeFlushed } from '../../util/output.js';
import { fetchDirectory } from './hub-access.js';

/** Progress and results go to stderr, one line each; stdout stays free for a program. */
export const say = (io: CliIO, lines: readonly string[]): void => {
  for (const line of lines) io.stderr.write(`${line}\n`);
};

/** Config files + precedence for the account commands (only --hub is a flag here); prints the warnings. */
export function loadSettings(io: CliIO, hub: string | undefined): Coded<ResolvedSettings & { userHubUrl: string | null }> {
  const loaded = loadConfigFiles({ env: io.env, cwd: io.cwd });
  if (!loaded.ok) return loaded;
  const settings = resolveSettings({ flags: hub === undefined ? {} : { hub }, env: io.env, loaded: loaded.value });
  if (!settings.ok) return settings;
  say(
    io,
    settings.value.warnings.map((w) => `warning: ${w}`),
  );
  return done({ ...settings.value, userHubUrl: loaded.value.user.settings.hubUrl ?? null });
}

/** Lines saying that an environment variable outranks the credentials file, when one is set. */
export function envOutranksNote(env: NodeJS.ProcessEnv): string[] {
  return (['OH_HAI_TOKEN', 'MA2H_AGENT_TOKENS'] as const)
    .filter((v) => (env[v] ?? '') !== '')
    .map((v) => `note: ${v} is set in this environment and outranks the credentials file for agent identity.`);
}

const labelled = (label: string | null) => (label ? ` (${JSON.stringify(label)})` : '');

/** Whose token was stored, and where: `login --json` and `setup --json` print it (src/cli/json/outputs.ts Identity). */
export interface StoredIdentity {
  kind: 'agent' | 'human';
  agent_id: string | null;
  agent_label: string | null;
  account_id: string | null;
  credentials_file: string;
}

/** A policy write as `--json` prints it (src/cli/json/outputs.ts PolicyWrite). */
export function policyJson(p: PolicyWriteResult): { status: PolicyWriteResult['status']; path: string; allow_from: string[] | null } {
  const list = p.status === 'not-written' ? null : p.allowFrom;
  const items = Array.isArray(list) && list.every((x) => typeof x === 'string') ? (list as string[]) : null;
  return { status: p.status, path: p.path, allow_from: items };
}

/** Print one JSON document on stdout (the lines for people went to stderr already). */
export const printJson = (io: CliIO, doc: unknown): Promise<void> => writeFlushed(io.stdout, JSON.stringify(doc) + '\n');

/** Store a verified token under its Hub: an agent token by agent id, a human token as the account's. */
export async function storeToken(
  env: NodeJS.ProcessEnv,
  hubUrl: string,
  who: Whoami,
  token: string,
): Promise<Coded<{ lines: string[]; identity: StoredIdentity }>> {
  const stored = await updateCredentials(env, (file) => {
    let hub = file.hubs.find((h) => h.hub === hubUrl);
    if (!hub) file.hubs.push((hub = { hub: hubUrl, agents: [], human: null }));
    if (who.kind === 'human') hub.human = { account_id: who.account.id, token };
    else hub.agents = [...hub.agents.filter((a) => a.id !== who.agent.id), { id: who.agent.id, label: who.agent.label, token }];
  });
  if (!stored.ok) return stored;
  const whom =
    who.kind === 'human' ? `the human of account ${who.account.id}${labelled(who.account.label)}` : `agent ${who.agent.id}${labelled(who.agent.label)}`;
  const identity: StoredIdentity =
    who.kind === 'human'
      ? { kind: 'human', agent_id: null, agent_label: null, account_id: who.account.id, credentials_file: stored.value.path }
      : { kind: 'agent', agent_id: who.agent.id, agent_label: who.agent.label, account_id: null, credentials_file: stored.value.path };
  return done({
    lines: [...stored.value.warnings.map((w) => `warning: ${w}`), `logged in to ${hubUrl} as ${whom}; the token is stored in ${stored.value.path} (mode 600).`],
    identity,
  });
}

/**
 * Write the sender policy when none exists. The credential is resolved inside the fetch,
 * which runs only after the never-widen check: a machine that already has a policy needs
 * no credential and makes no Hub call. A stored human token is preferred (it sees the whole
 * account); else the agent credential, which reads the directory only where it is advertised.
 */
export async function writePolicy(io: CliIO, hubUrl: string, by: string, agent: string | undefined): Promise<Coded<PolicyWriteResult>> {
  const written = await writeAllowFromIfAbsent({
    env: io.env,
    hubUrl,
    by,
    fetchAgents: async () => {
      const human = resolveHumanCredential({ env: io.env, hubUrl });
      if (human.ok) return fetchDirectory(hubUrl, { kind: 'human', token: human.value.token });
      const cred = resolveAgentCredential({ env: io.env, hubUrl, ...(agent === undefined ? {} : { agent }) });
      if (!cred.ok) return { kind: 'failed', error: cred.error };
      return fetchDirectory(hubUrl, { kind: 'agent', token: cred.value.token });
    },
  });
  if (written.ok) say(io, written.value.lines);
  return written;
}
