import { type CodedError, type Coded, done } from '../core/index.js';
import type { AgentRow } from '../hub/contract/index.js';
import { badAgentIdReason, showId } from './ids.js';
import { userConfigPath } from './paths.js';
import { describePolicy, parsePolicy } from './policy.js';
import { commentText, insertTableKey, tomlString } from './toml-edit.js';
import { type TomlDoc, readToml } from './toml-file.js';
import { editUserConfig } from './user-config-edit.js';

/** One row of GET /v1/account/agents (MA2H §10). */
export type DirectoryRow = AgentRow;

/** What the caller's Hub lookup found; it runs only after the never-widen check passed. */
export type DirectoryFetch =
  | { kind: 'directory'; rows: DirectoryRow[]; via: 'human token' | 'agent token' }
  /** The Hub advertises no `account.agent_directory` and no human token is stored. */
  | { kind: 'no-directory' }
  | { kind: 'failed'; error: CodedError };

export type PolicyWriteResult =
  | { status: 'exists'; path: string; allowFrom: unknown; lines: string[] }
  | { status: 'written'; path: string; allowFrom: string[]; lines: string[] }
  | { status: 'not-written'; path: string; lines: string[] };

/** `lines` (when it exists) say it was left untouched and name the two by-hand fixes. */
export type PolicyCheck = { exists: true; path: string; allowFrom: unknown; lines: string[] } | { exists: false; path: string };

const bridgeAllowFrom = (doc: TomlDoc): { present: boolean; value: unknown } => {
  const bridge = doc.bridge;
  if (bridge === null || typeof bridge !== 'object' || Array.isArray(bridge)) return { present: false, value: undefined };
  return 'allow_from' in bridge ? { present: true, value: (bridge as TomlDoc).allow_from } : { present: false, value: undefined };
};

const limitLine = 'The policy is written once and never refreshed (#1127): an agent minted after this write stays refused until you add it by hand.';

function existsLines(path: string, allowFrom: unknown): string[] {
  const parsed = Array.isArray(allowFrom) && allowFrom.every((i) => typeof i === 'string') ? parsePolicy(allowFrom) : null;
  const shown = parsed?.ok ? describePolicy(parsed.value) : 'as written there';
  return [
    `sender policy: [bridge] allow_from already exists in ${path} (${shown}); left untouched — an existing policy is never widened, however narrow.`,
    `To admit another peer, do it by hand: add "agent:<id>" to [bridge] allow_from in ${path}, or clear the key entirely and re-run \`oh-hai upgrade\` so the whole account list is written fresh.`,
    limitLine,
  ];
}

/**
 * The never-widen check: does the user config hold `[bridge] allow_from` in any form? It
 * reads one local file and nothing else, so setup, login --human and upgrade run it before
 * any Hub call. It cannot tell a list this tool wrote from one a person typed, and need not:
 * either way it is never touched.
 */
export function checkExistingPolicy(env: NodeJS.ProcessEnv): Coded<PolicyCheck> {
  const path = userConfigPath(env);
  const read = readToml(path);
  if (!read.ok) return read;
  if (!read.value.found) return done({ exists: false, path });
  const { present, value } = bridgeAllowFrom(read.value.doc);
  return done(present ? { exists: true, path, allowFrom: value, lines: existsLines(path, value) } : { exists: false, path });
}

/** Keep the rows the bridge could match; say which were left out and why. */
export function filterDirectory(rows: readonly DirectoryRow[]): { keep: DirectoryRow[]; lines: string[] } {
  const keep: DirectoryRow[] = [];
  const lines: string[] = [];
  const labelled = (r: DirectoryRow) => `${showId(r.id)}${r.label ? ` (${JSON.stringify(commentText(r.label))})` : ''}`;
  for (const r of rows) {
    if (keep.some((k) => k.id === r.id)) continue;
    if (r.revoked) {
      lines.push(`skipped agent ${labelled(r)}: it is revoked at the Hub, so it can send nothing.`);
      continue;
    }
    const problem = badAgentIdReason(r.id) ?? (r.id.includes('"') && r.id.includes("'") ? 'it contains both quote kinds (\' and ")' : null);
    if (problem) {
      lines.push(`dropped agent ${labelled(r)}: ${problem}, so the bridge could never match it.`);
      continue;
    }
    keep.push(r);
  }
  return { keep, lines };
}

function allowFromText(rows: readonly DirectoryRow[]): string {
  const items = rows.map((r) => {
    const note = [r.label ? commentText(r.label) : null, r.source === 'config' ? 'source: config' : null].filter((n) => n !== null).join(' — ');
    return `  ${tomlString(`agent:${r.id}`)},${note ? ` # ${note}` : ''}`;
  });
  return ['[', ...items, ']'].join('\n');
}

/**
 * Write every admissible agent of the account into `[bridge] allow_from` of the user config —
 * only when no policy exists. The check runs first; `fetchAgents` (the Hub call) runs only
 * when it passed; the check runs again under the config file's lock before the write, so two
 * concurrent runs cannot both write. Returns the lines the command prints.
 */
export async function writeAllowFromIfAbsent({
  env,
  hubUrl,
  by,
  fetchAgents,
}: {
  env: NodeJS.ProcessEnv;
  hubUrl: string;
  /** The command writing, for the comment left in the file. */
  by: string;
  fetchAgents: () => Promise<DirectoryFetch>;
}): Promise<Coded<PolicyWriteResult>> {
  const first = checkExistingPolicy(env);
  if (!first.ok) return first;
  const path = first.value.path;
  if (first.value.exists) return done({ status: 'exists', path, allowFrom: first.value.allowFrom, lines: first.value.lines });

  const fetched = await fetchAgents();
  if (fetched.kind === 'failed') return { ok: false, error: fetched.error };
  if (fetched.kind === 'no-directory')
    return done({
      status: 'not-written',
      path,
      lines: [
        `sender policy: not written — the Hub at ${hubUrl} does not advertise an account agent directory, and no human token is stored.`,
        'The bridge stays fail-closed: directives, notifies, responses and receipts are delivered; every addressed ask/task is refused.',
        `Fix: oh-hai login --human --hub ${hubUrl} --token-stdin < human-token-file (stores the account's human token and writes the policy from the account).`,
      ],
    });

  const { keep, lines } = filterDirectory(fetched.rows);
  if (keep.length === 0)
    return done({
      status: 'not-written',
      path,
      lines: [...lines, 'sender policy: not written — the account directory lists no agent the bridge could match; the bridge stays fail-closed.'],
    });

  const allowFrom = keep.map((r) => `agent:${r.id}`);
  if (!parsePolicy(allowFrom).ok) throw new Error('filterDirectory kept an id parsePolicy refuses');
  return editUserConfig(env, (current): Coded<{ text: string | null; result: PolicyWriteResult }> => {
    const raced = bridgeAllowFrom(current.doc);
    if (raced.present) return done({ text: null, result: { status: 'exists', path, allowFrom: raced.value, lines: existsLines(path, raced.value) } });
    const edited = insertTableKey({ ...current, file: path }, 'bridge', 'allow_from', allowFrom, allowFromText(keep), [
      `Written by \`oh-hai ${by}\`: every agent in the account (the sender policy: who may ask or task this agent).`,
      'Never refreshed (#1127): add peers minted later by hand, or delete this key and re-run `oh-hai upgrade`.',
    ]);
    if (!edited.ok) return edited;
    const listed = keep.map(
      (r) =>
        `  agent:${r.id}${r.label ? `  ${JSON.stringify(commentText(r.label))}` : ''}${r.source === 'config' ? "  (source: config — the Hub's configured token store)" : ''}`,
    );
    const noun = keep.length === 1 ? 'agent' : 'agents';
    return done({
      text: edited.value,
      result: {
        status: 'written',
        path,
        allowFrom,
        lines: [
          ...lines,
          `sender policy: wrote [bridge] allow_from to ${path} — ${keep.length} ${noun} from the account directory (read with the ${fetched.via}):`,
          ...listed,
          limitLine,
        ],
      },
    });
  });
}
