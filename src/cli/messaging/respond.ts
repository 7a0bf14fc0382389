import { type Coded, EXIT, type CodedError } from '../../core/index.js';
import type { HubFailure } from '../../hub/client/index.js';
import type { Message } from '../../hub/contract/index.js';
import { plain } from '../../reader/index.js';
import type { AgentAccess } from './access.js';
import { withThisSession, type Say } from './attach.js';
import { hubFailureError } from './failures.js';
import type { MessagingKnobs } from './access.js';
import { replyTarget } from './reply-target.js';
import { failureContext } from './send.js';
import type { ReplyRoute } from './send-lines.js';

/** How an answer went: queued now, or found already there from an earlier attempt of the same call. */
export type Answered =
  | { kind: 'queued'; messageId: string; message: Message; route: ReplyRoute }
  | { kind: 'earlier'; messageId: string; response: NonNullable<Message['response']> };

/**
 * Answer an ask or task by the id the reader printed (a message id, or an entry id looked up
 * in this agent's spools), with this agent session attached. `oh-hai reply` and the MCP
 * `oh_hai_reply` tool both answer through here.
 */
export async function answerMessage(a: AgentAccess, knobs: MessagingKnobs, say: Say, req: { id: string; text: string }): Promise<Coded<Answered>> {
  const target = replyTarget(a, req.id);
  if (!target.ok) return { ok: false, error: { code: 'not_answerable', exit: EXIT.usage, message: target.reason } };
  const { messageId } = target.value;
  const sent = await withThisSession(a, knobs, say, (session) => a.client.respond(messageId, { text: req.text, session }));
  if (sent.ok) return { ok: true, value: { kind: 'queued', messageId, message: sent.value.message, route: sent.route } };
  // respond carries no idempotency key: a retry that finds the answer already there may be finding our own first attempt.
  if (sent.attempts > 1 && isAlreadyResponded(sent.failure)) {
    const m = await a.client.getMessage(messageId);
    if (m.ok && m.value.response !== null && m.value.response.text === req.text)
      return { ok: true, value: { kind: 'earlier', messageId, response: m.value.response } };
  }
  return { ok: false, error: respondError(sent.failure, a, req.id, messageId) };
}

const isAlreadyResponded = (f: HubFailure): boolean => f.kind === 'http' && f.code === 'already_responded';

function respondError(f: HubFailure, a: AgentAccess, given: string, messageId: string): CodedError {
  if (f.kind === 'http') {
    const said = `${f.status} ${f.code}: ${f.message}`;
    if (f.status === 404) {
      const where = a.thisSession.stateDirPath ? `this agent session's spool (${a.thisSession.stateDirPath})` : "this agent's spools";
      const asEntry = given === messageId ? `it is not an entry id in ${where}, and ` : '';
      return {
        code: f.code,
        exit: EXIT.noSession,
        message: `nothing to answer as ${plain(given)}: ${asEntry}the Hub knows no such message for you (${said}); pass the id the bridge printed after \`reply:\``,
      };
    }
    if (f.code === 'not_respondable')
      return {
        code: f.code,
        exit: EXIT.usage,
        message: `${plain(messageId)} cannot be answered (${said}): only an ask or a task addressed to you takes a reply`,
      };
    if (f.code === 'already_responded')
      return {
        code: f.code,
        exit: EXIT.usage,
        message: `${plain(messageId)} already has an answer (${said}); an ask or task is answered once — see it with: oh-hai messages show ${plain(messageId)}`,
      };
  }
  return hubFailureError(f, failureContext(a, `answering ${messageId}`));
}
