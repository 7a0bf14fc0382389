import { existsSync } from 'node:fs';
import { validateEntry, type Entry } from '../../hub/contract/index.js';
import { SpoolReader } from '../../spool/index.js';
import { fail, ok, type Result } from '../../core/index.js';
import { plain } from '../../reader/index.js';
import { principalStateDirFor, type AgentAccess } from './access.js';

/** Where the entries this agent has been shown live: this agent session's spool, then the principal leg's. */
function spoolsOf(a: AgentAccess): string[] {
  const dirs = [a.thisSession.stateDirPath, principalStateDirFor(a.stateRoot, a.hubUrl, a.agentId)];
  return dirs.filter((d): d is string => d !== null && existsSync(d));
}

function findEntry(dirs: string[], id: string): Result<Entry> | null {
  for (const dir of dirs) {
    for (const item of new SpoolReader(dir).readAfter(0)) {
      const r = item.record;
      if (r.type === 'entry' && r.entry.id === id) return validateEntry(r.entry);
    }
  }
  return null;
}

/** Why an entry of this kind has nothing to answer, with what to do instead. */
function notAnswerable(e: Entry): string | null {
  switch (e.kind) {
    case 'message':
      return e.intent === 'notify'
        ? `entry ${plain(e.id)} is a notify from ${plain(e.from)}: no reply is expected; to write back anyway: oh-hai send --to ${plain(e.from)} <text>`
        : null;
    case 'directive':
      return `entry ${plain(e.id)} is a directive from ${plain(e.from)}: a human has no mailbox to answer into (MA2H sends directives no replies); act on it or surface it to them`;
    case 'response':
      return `entry ${plain(e.id)} is the answer to your ask ${plain(e.in_reply_to)}; to continue the exchange: oh-hai ask --to ${plain(e.from)} <text>`;
    case 'receipt':
      return `entry ${plain(e.id)} is a delivery receipt for your message ${plain(e.message_id)}: there is nothing to answer`;
  }
}

/**
 * The message id to answer. An entry id is looked up in this agent's spools and mapped to
 * its message_id; anything not found there is taken as a message id as it stands (ids are
 * opaque, so no prefix decides) and the Hub is the judge.
 */
export function replyTarget(a: AgentAccess, id: string): Result<{ messageId: string; via: 'entry' | 'message id' }> {
  const found = findEntry(spoolsOf(a), id);
  if (found === null) return ok({ messageId: id, via: 'message id' });
  if (!found.ok) return fail(`entry ${plain(id)} in the spool is not a valid entry (${found.reason}); pass the message id the bridge printed after \`reply:\``);
  const entry = found.value;
  const refusal = notAnswerable(entry);
  if (refusal !== null) return fail(refusal);
  if (entry.kind !== 'message') return fail(`entry ${plain(id)} has nothing to answer`);
  return ok({ messageId: entry.message_id, via: 'entry' });
}
