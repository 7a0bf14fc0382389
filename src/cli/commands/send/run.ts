import type { MessageIntent } from '../../../hub/contract/index.js';
import { formatDuration } from '../../../util/duration.js';
import { type CliIO } from '../../io.js';
import { startAnswerStatus } from '../../reading-status.js';
import { writeFlushed } from '../../../util/output.js';
import { success, toOutcome, usageError, type Outcome } from '../../../core/index.js';
import { plain } from '../../../reader/index.js';
import {
  answerMessage,
  checkDestination,
  failureContext,
  hubFailureError,
  queuedLines,
  readMessageText,
  readMessagingKnobs,
  resolveDestination,
  sendMessage,
  waitForResponse,
  waitResultLine,
  withAgentAccess,
  type AgentFlagValues,
} from '../../messaging/index.js';

export interface SendOptions extends AgentFlagValues {
  to?: string;
  wait?: string;
}

export async function runSend(intent: MessageIntent, textArg: string | undefined, opts: SendOptions, io: CliIO): Promise<Outcome> {
  const command = `oh-hai ${intent === 'notify' ? 'send' : intent}`;
  if (opts.to === undefined)
    return usageError(
      `${command} needs --to <agent>: an agent's label (reviewer), agent:<id> (its principal mailbox) or agent:<id>#sess_… (one run; see \`oh-hai fleet ls\`)`,
    );
  const to = checkDestination(opts.to, '--to');
  if (!to.ok) return toOutcome(to.error);
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
    const say = (line: string) => io.stderr.write(`${command}: ${line}\n`);
    const dest = await resolveDestination(a, to.value, '--to', new Date(io.clock.now()).toISOString());
    if (!dest.ok) return toOutcome(dest.error);
    const sent = await sendMessage(a, knobs.value, say, { to: dest.value.address, intent, text: text.value, command });
    if (!sent.ok) return toOutcome(sent.error);
    const { message, route } = sent.value;
    if (waitMs === null) {
      await writeFlushed(io.stdout, opts.json ? JSON.stringify(message) + '\n' : queuedLines(message, route, dest.value.label));
      return success();
    }
    if (!opts.json) await writeFlushed(io.stdout, queuedLines(message, route, dest.value.label));
    const stopStatus = startAnswerStatus(io, command, message.id, waitMs, opts.json === true);
    const end = await waitForResponse(a.client, message, { waitMs, pollMs: knobs.value.askPollMs, clock: io.clock }).finally(stopStatus);
    await writeFlushed(
      io.stdout,
      opts.json ? JSON.stringify(end.message) + '\n' : waitResultLine(end.message, waitMs >= 1000 ? formatDuration(waitMs) : `${waitMs / 1000}s`),
    );
    if (end.kind === 'failure') {
      const e = hubFailureError(end.failure, failureContext(a, `waiting for the answer to ${message.id}`));
      return { ...toOutcome(e), message: `${e.message}; the ask is queued at the Hub — check later with: oh-hai messages show ${message.id}` };
    }
    return success();
  });
}

const REPLY_COMMAND = 'oh-hai reply';

export async function runReply(id: string, textArg: string | undefined, opts: AgentFlagValues, io: CliIO): Promise<Outcome> {
  const knobs = readMessagingKnobs(io.env);
  if (!knobs.ok) return toOutcome(knobs.error);
  const text = await readMessageText(textArg, io, REPLY_COMMAND);
  if (!text.ok) return usageError(text.reason, 'bad_text');
  return withAgentAccess(REPLY_COMMAND, opts, io, async (a) => {
    const answered = await answerMessage(a, knobs.value, (line) => io.stderr.write(`${REPLY_COMMAND}: ${line}\n`), { id, text: text.value });
    if (!answered.ok) return toOutcome(answered.error);
    const r = answered.value;
    if (r.kind === 'earlier') {
      await writeFlushed(
        io.stdout,
        `answered ${plain(r.messageId)} (an earlier attempt of this command reached the Hub): response ${plain(r.response.message_id)} at ${r.response.at}\n`,
      );
      return success();
    }
    await writeFlushed(io.stdout, opts.json ? JSON.stringify(r.message) + '\n' : `answering ${plain(r.messageId)}:\n` + queuedLines(r.message, r.route));
    return success();
  });
}
