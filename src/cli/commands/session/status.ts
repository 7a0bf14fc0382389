import { EXIT, toOutcome, type Outcome } from '../../../core/index.js';
import { type CliIO } from '../../io.js';
import { writeFlushed } from '../../../util/output.js';
import { plain } from '../../../reader/index.js';
import { readMessagingKnobs, sessionStatus, statusEpilogue, statusLines, withAgentAccess, type AgentFlagValues } from '../../messaging/index.js';

const NAME = 'oh-hai session status';

/** `oh-hai session status`: the Hub's view (the authority) beside this host's record, each labelled with whose clock it is. */
export async function runStatus(opts: AgentFlagValues, io: CliIO): Promise<Outcome> {
  const knobs = readMessagingKnobs(io.env);
  if (!knobs.ok) return toOutcome(knobs.error);
  return withAgentAccess(NAME, opts, io, async (a) => {
    const ts = a.thisSession;
    // Having no session is an answer, not a failure: said on stdout, exit 0 (docs/terminal.md).
    if (ts.kind === 'none') {
      const line = opts.json
        ? JSON.stringify({ session_id: null, hub: null, hub_error: ts.why, local: null })
        : `no session: ${ts.why}; the next oh-hai bridge run registers one`;
      await writeFlushed(io.stdout, line + '\n');
      return { exit: EXIT.ok };
    }
    const now = io.clock.now();
    const status = await sessionStatus(a, ts, knobs.value, now);
    if (!status.ok) return toOutcome(status.error);
    const { view } = status.value;
    if (opts.json) {
      await writeFlushed(io.stdout, JSON.stringify(view) + '\n');
    } else {
      const epilogue = statusEpilogue(status.value, 'as last seen here (renewal age on our clock)', now);
      const head = `session ${plain(ts.id)} · ${plain(ts.address)}`;
      await writeFlushed(io.stdout, [head, ...statusLines(view, epilogue)].join('\n') + '\n');
    }
    if (view.hub === null) {
      return {
        exit: EXIT.noSession,
        code: 'session_not_found',
        message: `the Hub does not know session ${ts.id} (${view.hub_error}); oh-hai bridge registers a new one`,
      };
    }
    return { exit: EXIT.ok };
  });
}
