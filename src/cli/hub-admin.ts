import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parseHubUrl } from '../config/hub-url.js';
import { HubClient, type HubFailure, type HubResult } from '../hub/client/index.js';
import type { AgentRow, Message, Session } from '../hub/contract/index.js';
import { EXIT, toOutcome, usageError, type CodedError, type Outcome } from '../core/index.js';
import { checkDestination, isName, resolveName } from './messaging/index.js';
import type { CliIO } from './io.js';
import { formatTable, PLAIN } from './terminal/index.js';
import { HUB_RECORD_FILE, HUMAN_TOKEN_FILE } from '../hub/server/files.js';
import { resolveDataDir } from '../hub/server/data-dir.js';

/** The flags every `oh-hai hub admin …` command takes. */
export interface AdminFlags {
  data?: string;
  hub?: string;
  json?: boolean;
}

type Admin = { ok: true; client: HubClient; url: string; dataDir: string } | { ok: false; outcome: Outcome };

function readText(file: string): string | null {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return null;
  }
}

/** The human token from the data dir (never from argv) and the Hub URL: --hub, else the one the Hub recorded. */
function connect(flags: AdminFlags, io: CliIO): Admin {
  const dataDir = resolveDataDir(flags.data, io.env, io.cwd);
  const tokenPath = path.join(dataDir, HUMAN_TOKEN_FILE);
  const token = readText(tokenPath)?.trim();
  if (!token) {
    return {
      ok: false,
      outcome: toOutcome({
        code: 'no_human_token',
        exit: EXIT.auth,
        message: `no human token at ${tokenPath}; start the Hub once with oh-hai hub serve${flags.data ? ` --data ${dataDir}` : ''} (it creates the token), or pass the Hub's --data dir`,
      }),
    };
  }
  let url = flags.hub;
  if (url === undefined) {
    const recordPath = path.join(dataDir, HUB_RECORD_FILE);
    const raw = readText(recordPath);
    try {
      const record = raw === null ? null : (JSON.parse(raw) as { url?: unknown });
      if (record && typeof record.url === 'string') url = record.url;
    } catch {
      /* an unreadable record is reported below like a missing one */
    }
    if (url === undefined)
      return {
        ok: false,
        outcome: usageError(`no Hub URL recorded in ${recordPath}; is oh-hai hub serve running with this --data? Or pass --hub <url>`, 'no_hub_url'),
      };
  }
  const origin = parseHubUrl(url, flags.hub !== undefined ? '--hub' : HUB_RECORD_FILE);
  if (!origin.ok) return { ok: false, outcome: toOutcome(origin.error) };
  return { ok: true, client: new HubClient({ baseUrl: origin.value, token, userAgent: 'oh-hai hub admin' }), url: origin.value, dataDir };
}

function failed(f: HubFailure, url: string): Outcome {
  if (f.kind === 'network') {
    return {
      exit: EXIT.unreachable,
      code: 'hub_unreachable',
      message: `could not reach the Hub at ${url} (${f.message}); is oh-hai hub serve running? Pass --hub if it moved`,
    };
  }
  if (f.kind === 'protocol') return { exit: EXIT.unreachable, code: 'protocol', message: `the Hub at ${url} answered outside MA2H: ${f.message}` };
  if (f.status === 401) {
    return { exit: EXIT.auth, code: f.code, message: `the Hub at ${url} refused the human token (${f.message}); is --data the data dir of this Hub?` };
  }
  if (f.status >= 500 || f.status === 429) return { exit: EXIT.unreachable, code: f.code, message: `the Hub at ${url} failed: ${f.message}` };
  const fix = whereToLook(f.code, url);
  return { exit: EXIT.usage, code: f.code, message: fix === null ? f.message : `${f.message}; ${fix}` };
}

/** The Hub names what it did not find; the refusal also says where the ones that exist are listed. */
function whereToLook(code: string, url: string): string | null {
  const fleet = `the web inbox's Fleet page (${url}/fleet) lists the live sessions, each with its sess_… id`;
  if (code === 'agent_not_found') return 'oh-hai hub agent ls lists the agents of this account';
  if (code === 'session_not_found') return fleet;
  if (code === 'recipient_not_found') return `oh-hai hub agent ls lists the agents; ${fleet}`;
  // A directive to one run that has ended: the agent's principal mailbox still reaches it, through any live bridge or inbox watch.
  if (code.startsWith('session_'))
    return `address the agent itself (agent:<id>, without #sess_…) to reach whichever run of it drains next, or a live run; ${fleet}`;
  return null;
}

/** Run one admin call, close the client, and turn the result into printed lines or a coded failure. */
/** A local refusal found between two Hub calls (a name that resolves to no one). */
type Refused = { ok: false; refused: CodedError };

async function admin<T>(flags: AdminFlags, io: CliIO, call: (c: HubClient) => Promise<HubResult<T> | Refused>, print: (v: T) => string[]): Promise<Outcome> {
  const a = connect(flags, io);
  if (!a.ok) return a.outcome;
  try {
    const r = await call(a.client);
    if (!r.ok) return 'refused' in r ? toOutcome(r.refused) : failed(r.failure, a.url);
    // docs/json.md: one compact document per --json.
    const lines = flags.json ? [JSON.stringify(r.value)] : print(r.value);
    for (const line of lines) io.stdout.write(line + '\n');
    return { exit: EXIT.ok, style: 'silent' };
  } finally {
    await a.client.close();
  }
}

/**
 * The Hub lets two agents share a label, and then a send to that label is refused as ambiguous
 * (docs/messaging.md "Names"): minting the second says so while the mistake is one command old.
 */
async function sharedLabelWarning(c: HubClient, label: string): Promise<string | null> {
  const rows = await c.listAgents({ includeConfig: true });
  if (!rows.ok) return null;
  const same = rows.value.filter((a) => !a.revoked && a.label === label).map((a) => `agent:${a.id}`);
  if (same.length === 0) return null;
  return (
    `oh-hai hub agent add: ⚠️ ${same.join(', ')} already ${same.length === 1 ? 'has' : 'have'} the label ${JSON.stringify(label)}: ` +
    `a send or directive --to ${label} is now refused as ambiguous; address each by agent:<id>, or revoke the one you did not mean (oh-hai hub agent revoke <id>)`
  );
}

export const runAgentAdd = (label: string, flags: AdminFlags, io: CliIO): Promise<Outcome> =>
  admin(
    flags,
    io,
    async (c) => {
      const warning = await sharedLabelWarning(c, label);
      const minted = await c.mintAgent({ label });
      if (minted.ok && warning !== null) io.stderr.write(warning + '\n');
      return minted;
    },
    (m) => [
      `minted agent ${m.agent.id} (${JSON.stringify(m.agent.label ?? label)})`,
      `token (shown once — store it now, e.g. oh-hai login --token-stdin): ${m.token}`,
    ],
  );

const agentRow = (a: AgentRow): string[] => [a.id, a.label ?? '-', a.revoked ? 'revoked' : 'active', a.source];

/** Aligned on a terminal, tab-separated in a pipe (docs/terminal.md). */
export const runAgentLs = (flags: AdminFlags, io: CliIO): Promise<Outcome> =>
  admin(
    flags,
    io,
    (c) => c.listAgents({ includeConfig: true }),
    (rows) =>
      rows.length === 0
        ? ['no agents yet; mint one with oh-hai hub agent add <label>']
        : formatTable([['id', 'label', 'state', 'source'], ...rows.map(agentRow)], io.terminal?.stdout ?? PLAIN)
            .split('\n')
            .slice(0, -1),
  );

/**
 * `hub agent revoke` and `hub lift` take an agent id, while `hub directive --to` also takes a
 * label. Given a label, the Hub's "no agent builder in this account" is untrue to the human who
 * just minted builder: say it is a label, and which id to pass.
 */
async function labelGivenForId<T>(c: HubClient, given: string, retry: (id: string) => string, r: HubResult<T>): Promise<HubResult<T> | Refused> {
  if (r.ok || r.failure.kind !== 'http' || r.failure.code !== 'agent_not_found') return r;
  const rows = await c.listAgents({ includeConfig: true });
  const ids = rows.ok ? rows.value.filter((a) => !a.revoked && a.label === given).map((a) => a.id) : [];
  if (ids.length === 0) return r;
  const fix = ids.length === 1 ? `run ${retry(ids[0]!)}` : `it is shared, so run ${retry('<id>')} with the one you mean`;
  const message = `${JSON.stringify(given)} is a label, not an agent id: it labels ${ids.map((id) => `agent ${id}`).join(' and ')}; ${fix}`;
  const refused: CodedError = { code: 'label_for_id', exit: EXIT.usage, message };
  return { ok: false, refused };
}

export const runAgentRevoke = (id: string, flags: AdminFlags, io: CliIO): Promise<Outcome> =>
  admin(
    flags,
    io,
    async (c): Promise<HubResult<{ agent_id: string; revoked: true }> | Refused> => {
      const r = await labelGivenForId(c, id, (agent) => `oh-hai hub agent revoke ${agent}`, await c.revokeAgent(id));
      return r.ok ? { ...r, value: { agent_id: id, revoked: true } } : r;
    },
    () => [`revoked agent ${id}: its token now gets 401`],
  );

/**
 * `hub directive --to <agent>`: an address as written, or an agent's label (or bare id)
 * resolved through the directory the human token reads (docs/messaging.md "Names").
 */
export async function runDirective(to: string, text: string, flags: AdminFlags, io: CliIO): Promise<Outcome> {
  const shape = checkDestination(to, '--to');
  if (!shape.ok) return toOutcome(shape.error);
  let label: string | null = null;
  return admin(
    flags,
    io,
    async (c): Promise<HubResult<Message> | Refused> => {
      const rows = await c.listAgents({ includeConfig: true });
      if (!rows.ok && isName(to)) return rows;
      const dest = resolveName(to, rows.ok ? rows.value : [], '--to');
      if (!dest.ok) return { ok: false, refused: dest.error };
      label = dest.value.label;
      return c.directive({ to: dest.value.address, text });
    },
    (m: Message) => [
      `queued directive ${m.id} to ${m.to}${label === null ? '' : ` (${label})`} (destination ${m.destination?.snapshot ?? 'unknown'}; queued is not read — watch the track for acknowledged)`,
    ],
  );
}

export const runOperatorClose = (id: string, flags: AdminFlags, io: CliIO): Promise<Outcome> =>
  admin(
    flags,
    io,
    (c) => c.operatorClose(id),
    (s: Session) =>
      s.state === 'closed_by_operator'
        ? [
            `session ${s.id} (${s.address}) is closed_by_operator: its queued mail bounced and re-registering is refused`,
            `to allow it again: oh-hai hub lift --agent ${s.agent_id}${s.name ? ` --name ${s.name}` : ''}`,
          ]
        : [`session ${s.id} was already ${s.state}; nothing changed`],
  );

export const runLift = (flags: AdminFlags & { agent: string; clientKey?: string; name?: string }, io: CliIO): Promise<Outcome> =>
  admin(
    flags,
    io,
    async (c) =>
      labelGivenForId(
        c,
        flags.agent,
        (agent) => ['oh-hai hub lift --agent', agent, ...narrowing(flags)].join(' '),
        await c.liftStop({
          agent_id: flags.agent,
          ...(flags.clientKey !== undefined ? { client_key: flags.clientKey } : {}),
          ...(flags.name !== undefined ? { name: flags.name } : {}),
        }),
      ),
    (r) => liftLines(r.lifted, flags),
  );

/**
 * What a lift did. Zero is an answer, not a failure (the stop may be gone already), but it
 * must not read as a lift: "lifted 0 … it may register again" told the human the agent was
 * free when nothing at all had matched. A Hub that does not say how many (null) lifted some.
 */
const narrowing = (flags: { clientKey?: string; name?: string }): string[] =>
  [flags.name !== undefined ? `--name ${flags.name}` : null, flags.clientKey !== undefined ? `--client-key ${flags.clientKey}` : null].filter(
    (x) => x !== null,
  );

function liftLines(lifted: number | null, flags: { agent: string; clientKey?: string; name?: string }): string[] {
  const narrowed = narrowing(flags);
  const matching = narrowed.length > 0 ? ` matching ${narrowed.join(' or ')}` : '';
  if (lifted === 0)
    return [
      `nothing was lifted: agent ${flags.agent} has no operator stop${matching} — none was recorded, or it was lifted already; nothing changed`,
      "the web inbox's Fleet page lists the operator stops this account has recorded, each with its Lift button",
    ];
  const what = lifted === null ? 'the operator stops' : lifted === 1 ? '1 operator stop' : `${lifted} operator stops`;
  return [
    `lifted ${what}${matching} for agent ${flags.agent}: it may register a session again`,
    // The agent was told (exit 14) not to re-run; nothing at the Hub can tell it the stop is gone.
    'its next oh-hai bridge registers a new session (a new address) by itself; it was told not to re-run, so tell it that it may (a pinned run, --session sess_…, stays closed: clear or repoint its pin)',
  ];
}

export function runMessaging(state: string, flags: AdminFlags, io: CliIO): Promise<Outcome> {
  if (state !== 'on' && state !== 'off') return Promise.resolve(usageError(`messaging takes on or off, got "${state}"`));
  return admin(
    flags,
    io,
    (c) => c.patchAccount({ agent_messaging: state === 'on' }),
    (a) => [`agent messaging is ${a.agent_messaging ? 'on' : 'off'} for this account`],
  );
}
