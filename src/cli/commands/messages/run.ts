import { EXIT, success, toOutcome, usageError, type Outcome } from '../../../core/index.js';
import { type CliIO } from '../../io.js';
import { writeFlushed } from '../../../util/output.js';
import { cachedLabels } from '../../../spool/index.js';
import { hubFailureError, isSelfTestMessage, listText, showText, withAgentAccess, type AgentAccess, type AgentFlagValues } from '../../messaging/index.js';

export interface ListOptions extends AgentFlagValues {
  limit?: string;
  before?: string;
  received?: boolean;
  all?: boolean;
}

const ctx = (a: AgentAccess, doing: string) => ({ hubUrl: a.hubUrl, credential: a.credential.source, doing });

export async function runList(opts: ListOptions, io: CliIO): Promise<Outcome> {
  let limit: number | undefined;
  if (opts.limit !== undefined) {
    limit = Number(opts.limit);
    if (!Number.isInteger(limit) || limit < 1) return usageError(`--limit ${JSON.stringify(opts.limit)} is not a positive whole number, e.g. --limit 20`);
  }
  const direction = opts.received ? 'received' : 'sent';
  return withAgentAccess('oh-hai messages', opts, io, async (a) => {
    const r = await a.client.listMessages({ direction, limit, before: opts.before });
    if (!r.ok) return toOutcome(hubFailureError(r.failure, ctx(a, `listing the messages you ${direction === 'sent' ? 'sent' : 'received'}`)));
    const messages = opts.all ? r.value.messages : r.value.messages.filter((m) => !isSelfTestMessage(m));
    const out = opts.json ? JSON.stringify(messages) + '\n' : listText(messages, direction, r.value.next, cachedLabels(a), io.terminal?.stdout);
    await writeFlushed(io.stdout, out);
    // The array is the whole stdout document; where the next page starts is said beside it, as in the text.
    if (opts.json && r.value.next !== null) io.stderr.write(`oh-hai messages list: older messages: --before ${r.value.next}\n`);
    return success();
  });
}

export async function runShow(id: string, opts: AgentFlagValues, io: CliIO): Promise<Outcome> {
  return withAgentAccess('oh-hai messages', opts, io, async (a) => {
    const r = await a.client.getMessage(id);
    if (!r.ok) {
      const f = r.failure;
      if (f.kind === 'http' && f.status === 404) {
        return {
          exit: EXIT.noSession,
          code: f.code,
          message: `no message ${JSON.stringify(id)} that this agent sent or received (${f.status} ${f.code}: ${f.message}); see \`oh-hai messages list\``,
        };
      }
      return toOutcome(hubFailureError(f, ctx(a, `reading message ${id}`)));
    }
    await writeFlushed(io.stdout, opts.json ? JSON.stringify(r.value) + '\n' : showText(r.value, cachedLabels(a)));
    return success();
  });
}
