import { type CliIO } from '../../io.js';
import { writeFlushed } from '../../../util/output.js';
import { success, toOutcome, usageError, type Outcome } from '../../../core/index.js';
import { plain } from '../../../reader/index.js';
import { answerMessage, queuedLines, readMessageText, readMessagingKnobs, withAgentAccess, type AgentFlagValues } from '../../messaging/index.js';

const COMMAND = 'oh-hai reply';

export async function runReply(id: string, textArg: string | undefined, opts: AgentFlagValues, io: CliIO): Promise<Outcome> {
  const knobs = readMessagingKnobs(io.env);
  if (!knobs.ok) return toOutcome(knobs.error);
  const text = await readMessageText(textArg, io, COMMAND);
  if (!text.ok) return usageError(text.reason, 'bad_text');
  return withAgentAccess(COMMAND, opts, io, async (a) => {
    const answered = await answerMessage(a, knobs.value, (line) => io.stderr.write(`${COMMAND}: ${line}\n`), { id, text: text.value });
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
