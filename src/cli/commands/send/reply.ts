import { EXIT } from '../../exit-codes.js';
import { writeFlushed, type CliIO } from '../../io.js';
import { success, toOutcome, usageError, type CodedError, type Outcome } from '../../outcome.js';
import type { HubFailure } from '../../../hub/client/index.js';
import { plain } from '../bridge/summary.js';
import { hubFailureError, readMessageText, readMessagingKnobs, withAgentAccess, type AgentAccess, type AgentFlagValues } from '../messaging/index.js';
import { withThisSession } from './attach.js';
import { queuedLines } from './output.js';
import { replyTarget } from './reply-target.js';

const COMMAND = 'oh-hai reply';

export async function runReply(id: string, textArg: string | undefined, opts: AgentFlagValues, io: CliIO): Promise<Outcome> {
  const knobs = readMessagingKnobs(io.env);
  if (!knobs.ok) return toOutcome(knobs.error);
  const text = await readMessageText(textArg, io, COMMAND);
  if (!text.ok) return usageError(text.reason, 'bad_text');
  return withAgentAccess(COMMAND, opts, io, async (a) => {
    const target = replyTarget(a, id);
    if (!target.ok) return usageError(target.reason, 'not_answerable');
    const { messageId } = target.value;
    const sent = await withThisSession(a, knobs.value, io, COMMAND, (session) => a.client.respond(messageId, { text: text.value, session }));
    if (!sent.ok) {
      // respond carries no idempotency key: a retry that finds the answer already there may be finding our own first attempt.
      if (sent.attempts > 1 && isAlreadyResponded(sent.failure)) {
        const m = await a.client.getMessage(messageId);
        if (m.ok && m.value.response !== null && m.value.response.text === text.value) {
          await writeFlushed(io.stdout, `answered ${plain(messageId)} (an earlier attempt of this command reached the Hub): response ${plain(m.value.response.message_id)} at ${m.value.response.at}\n`);
          return success();
        }
      }
      return toOutcome(respondError(sent.failure, a, id, messageId));
    }
    const m = sent.value.message;
    await writeFlushed(io.stdout, opts.json ? JSON.stringify(m) + '\n' : `answering ${plain(messageId)}:\n` + queuedLines(m, sent.route));
    return success();
  });
}

const isAlreadyResponded = (f: HubFailure): boolean => f.kind === 'http' && f.code === 'already_responded';

function respondError(f: HubFailure, a: AgentAccess, given: string, messageId: string): CodedError {
  if (f.kind === 'http') {
    const said = `${f.status} ${f.code}: ${f.message}`;
    if (f.status === 404) {
      const where = a.thisSession.entryDir ? `this agent session's spool (${a.thisSession.entryDir})` : "this agent's spools";
      const asEntry = given === messageId ? `it is not an entry id in ${where}, and ` : '';
      return {
        code: f.code,
        exit: EXIT.noSession,
        message: `nothing to answer as ${plain(given)}: ${asEntry}the Hub knows no such message for you (${said}); pass the id the bridge printed after \`reply:\``,
      };
    }
    if (f.code === 'not_respondable') return { code: f.code, exit: EXIT.usage, message: `${plain(messageId)} cannot be answered (${said}): only an ask or a task addressed to you takes a reply` };
    if (f.code === 'already_responded') return { code: f.code, exit: EXIT.usage, message: `${plain(messageId)} already has an answer (${said}); an ask or task is answered once — see it with: oh-hai messages show ${plain(messageId)}` };
  }
  return hubFailureError(f, { hubUrl: a.hubUrl, credential: a.credential.source, doing: `answering ${messageId}` });
}
