import { randomUUID } from 'node:crypto';
import type { HubFailure } from '../../../hub/client/index.js';
import { parseAddress, type MessageIntent } from '../../../hub/contract/index.js';
import { formatDuration } from '../../../util/duration.js';
import { EXIT } from '../../exit-codes.js';
import { writeFlushed, type CliIO } from '../../io.js';
import { success, toOutcome, usageError, type Outcome } from '../../outcome.js';
import { hubFailureError, readMessageText, readMessagingKnobs, withAgentAccess, type AgentAccess, type AgentFlagValues } from '../messaging/index.js';
import { withThisSession } from './attach.js';
import { queuedLines, waitResultLine } from './output.js';
import { waitForResponse } from './wait.js';

export interface SendOptions extends AgentFlagValues {
  to?: string;
  wait?: string;
}

export async function runSend(intent: MessageIntent, textArg: string | undefined, opts: SendOptions, io: CliIO): Promise<Outcome> {
  const command = `oh-hai ${intent === 'notify' ? 'send' : intent}`;
  const dest = opts.to;
  if (dest === undefined) return usageError(`${command} needs --to <address>: agent:<id> (the agent's principal mailbox) or agent:<id>#sess_… (one run; see \`oh-hai fleet ls\`)`);
  const to = parseAddress(dest, '--to');
  if (!to.ok) return usageError(`${to.reason}; an address is agent:<id> or agent:<id>#sess_… (see \`oh-hai fleet ls\`)`, 'bad_address');
  let waitMs: number | null = null;
  if (opts.wait !== undefined) {
    const s = Number(opts.wait);
    if (!Number.isFinite(s) || s <= 0) return usageError(`--wait ${JSON.stringify(opts.wait)} is not a positive number of seconds, e.g. --wait 60`);
    waitMs = s * 1000;
  }
  const knobs = readMessagingKnobs(io.env);
  if (!knobs.ok) return toOutcome(knobs.error);
  const text = await readMessageText(textArg, io, command);
  if (!text.ok) return usageError(text.reason, 'bad_text');

  // --wait here is the ask's wait for an answer, not the bridge's wait bound: only the identity flags go on.
  return withAgentAccess(command, { hub: opts.hub, agent: opts.agent, session: opts.session, stateHome: opts.stateHome }, io, async (a) => {
    const key = `oh-hai-${randomUUID()}`;
    const body = { to: dest, intent, text: text.value };
    const sent = await withThisSession(a, knobs.value, io, command, (session, attempt) =>
      // A different body needs a different key: a refused first attempt queued nothing.
      a.client.send({ ...body, session, idempotency_key: attempt === 'first' ? key : `${key}-unattached` }),
    );
    if (!sent.ok) return toOutcome(recipientError(sent.failure, dest, a, command));
    const { message } = sent.value;
    if (waitMs === null) {
      await writeFlushed(io.stdout, opts.json ? JSON.stringify(message) + '\n' : queuedLines(message, sent.route));
      return success();
    }
    if (!opts.json) await writeFlushed(io.stdout, queuedLines(message, sent.route));
    const end = await waitForResponse(a.client, message, { waitMs, pollMs: knobs.value.askPollMs, clock: io.clock });
    await writeFlushed(io.stdout, opts.json ? JSON.stringify(end.message) + '\n' : waitResultLine(end.message, waitMs >= 1000 ? formatDuration(waitMs) : `${waitMs / 1000}s`));
    if (end.kind === 'failure') {
      const e = hubFailureError(end.failure, failureContext(a, `waiting for the answer to ${message.id}`));
      return { ...toOutcome(e), message: `${e.message}; the ask is queued at the Hub — check later with: oh-hai messages show ${message.id}` };
    }
    return success();
  });
}

const failureContext = (a: AgentAccess, doing: string) => ({ hubUrl: a.hubUrl, credential: a.credential.source, doing });

/** What a refused recipient means, with the fix; everything else is the shared mapping. */
function recipientError(f: HubFailure, to: string, a: AgentAccess, command: string) {
  const ctx = failureContext(a, `${command} to ${to}`);
  if (f.kind === 'http' && f.code === 'recipient_not_found') {
    return {
      code: f.code,
      exit: EXIT.noSession,
      message: `there is no such recipient in this account: ${to} (${f.message}); check the address against \`oh-hai fleet ls\`, or address the agent's principal mailbox agent:<id>`,
    };
  }
  if (f.kind === 'http' && f.status === 410) {
    const state = typeof f.details.state === 'string' ? f.details.state.replace(/_/g, ' ') : f.code;
    return {
      code: f.code,
      exit: EXIT.noSession,
      message:
        `${to} is ${state}: that run's session has ended, so its address takes no more mail (${f.message}). ` +
        `Address a live session from \`oh-hai fleet ls\`, or the agent's principal address agent:<id>, which whichever live session claims it first receives`,
    };
  }
  return hubFailureError(f, ctx);
}
