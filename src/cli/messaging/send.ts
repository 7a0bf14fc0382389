import { randomUUID } from 'node:crypto';
import { type Coded, EXIT, type CodedError } from '../../core/index.js';
import type { HubFailure } from '../../hub/client/index.js';
import type { Message, MessageIntent } from '../../hub/contract/index.js';
import type { AgentAccess } from './access.js';
import { withThisSession, type Say } from './attach.js';
import { hubFailureError, type FailureContext } from './failures.js';
import type { MessagingKnobs } from './access.js';
import type { ReplyRoute } from './send-lines.js';
import { fetchAgentDirectory } from './directory.js';
import { readDirectoryCache } from '../../spool/index.js';
import { isName, resolveName, type Resolved } from '../../hub/contract/index.js';

export interface Queued {
  message: Message;
  route: ReplyRoute;
}

/** The destination's shape, checked before any Hub call (`where`: `--to`, `to`): an `agent:` address, or a name to look up. */
export function checkDestination(to: string, where: string): Coded<string> {
  const shape = resolveName(to, [], where);
  return shape.ok || shape.error.code !== 'bad_address' ? { ok: true, value: to } : shape;
}

/**
 * The address to send to and the label to print beside it. A name costs the directory
 * (two GETs, and the cache refreshed); an `agent:` address costs nothing and takes its
 * label from the cache when there is one.
 */
export async function resolveDestination(a: AgentAccess, to: string, where: string, nowIso: string): Promise<Coded<Resolved>> {
  if (!isName(to)) return resolveName(to, readDirectoryCache(a) ?? [], where);
  const rows = await fetchAgentDirectory(a, nowIso, `looking up ${where} ${JSON.stringify(to)} in the agent directory`);
  if (!rows.ok) return rows;
  return resolveName(to, rows.value, where);
}

export const failureContext = (a: Pick<AgentAccess, 'hubUrl' | 'credential'>, doing: string, request?: string): FailureContext => ({
  hubUrl: a.hubUrl,
  credential: a.credential.source,
  doing,
  ...(request === undefined ? {} : { request }),
});

/**
 * Queue a notify, ask or task as this agent, with this agent session attached when it has
 * one: one idempotency key for every retry of the body, so a retry never queues a second
 * copy. `oh-hai send|ask|task` and the MCP tools both send through here.
 */
export async function sendMessage(
  a: AgentAccess,
  knobs: MessagingKnobs,
  say: Say,
  req: { to: string; intent: MessageIntent; text: string; command: string },
): Promise<Coded<Queued>> {
  const key = `oh-hai-${randomUUID()}`;
  const body = { to: req.to, intent: req.intent, text: req.text };
  const sent = await withThisSession(a, knobs, say, (session, attempt) =>
    // A different body needs a different key: a refused first attempt queued nothing.
    a.client.send({ ...body, session, idempotency_key: attempt === 'first' ? key : `${key}-unattached` }),
  );
  if (!sent.ok) return { ok: false, error: recipientError(sent.failure, req.to, a, req.command) };
  return { ok: true, value: { message: sent.value.message, route: sent.route } };
}

/** What a refused recipient means, with the fix; everything else is the shared mapping. */
function recipientError(f: HubFailure, to: string, a: AgentAccess, command: string): CodedError {
  if (f.kind === 'http' && f.code === 'recipient_not_found') {
    return {
      code: f.code,
      exit: EXIT.noSession,
      message: `there is no such recipient in this account: ${to} (${f.message}); check the address against \`oh-hai fleet ls\`; an agent's label goes without the agent: prefix (--to reviewer), its id with it (--to agent:agt_…)`,
    };
  }
  if (f.kind === 'http' && f.status === 410) {
    const state = typeof f.details.state === 'string' ? f.details.state.replace(/_/g, ' ') : f.code;
    return {
      code: f.code,
      exit: EXIT.noSession,
      message:
        `${to} is ${state}: that run's session has ended, so its address takes no more mail (${f.message}). ` +
        `Address a live session from \`oh-hai fleet ls --sessions\`, or the agent's principal address agent:<id>, which whichever live session claims it first receives`,
    };
  }
  return hubFailureError(f, failureContext(a, `${command} to ${to}`));
}
