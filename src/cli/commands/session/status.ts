import { EXIT } from '../../exit-codes.js';
import { writeFlushed, type CliIO } from '../../io.js';
import { toOutcome, type Outcome } from '../../outcome.js';
import { plain } from '../bridge/summary.js';
import { readMessagingKnobs, sessionStatus, statusEpilogue, withAgentAccess, type AgentFlagValues, type StatusView } from '../messaging/index.js';

const NAME = 'oh-hai session status';

function hubLines(v: StatusView): string[] {
  const s = v.hub;
  if (!s) return [`at the Hub (the authority): could not be read — ${v.hub_error ?? 'no answer'}`];
  const holder = s.holder
    ? ` · held by pid ${s.holder.pid} on ${plain(s.holder.host)}${s.holder.since ? ` since ${s.holder.since}` : ''}${s.holder.last_seen_at ? `, last seen ${s.holder.last_seen_at}` : ''}`
    : ' · no consumer holds it';
  const closed = s.closed_at ? ` · closed at ${s.closed_at}` : '';
  return [
    `at the Hub (the authority; every instant is the Hub's clock): ${s.state} · lease ${s.lease_seconds} s · expires ${s.expires_at} · last renewed ${s.last_renewed_at} · created ${s.created_at}${closed}${holder}`,
  ];
}

function localLines(v: StatusView, epilogue: string[]): string[] {
  if (!v.local) return ['on this host: no state entry for this agent session'];
  const a = v.local.annotation;
  const reader = a.reader_attending === true ? 'reader attending' : a.reader_attending === null ? `reader unknown (${a.reader_note})` : `reader not attending (${a.reader_note})`;
  const lag = a.lag === null ? 'unread unknown' : `${a.lag} unread`;
  return [...epilogue, `on this host: ${reader} · ${lag} · state entry ${a.entry}`];
}

/** `oh-hai session status`: the Hub's view (the authority) beside this host's record, each labelled with whose clock it is. */
export async function runStatus(opts: AgentFlagValues, io: CliIO): Promise<Outcome> {
  const knobs = readMessagingKnobs(io.env);
  if (!knobs.ok) return toOutcome(knobs.error);
  return withAgentAccess(NAME, opts, io, async (a) => {
    const ts = a.thisSession;
    if (ts.kind === 'none') return { exit: EXIT.noSession, code: 'no_session', message: `${ts.why}; there is no session to ask the Hub about` };
    const now = io.clock.now();
    const status = await sessionStatus(a, ts, knobs.value, now);
    if (!status.ok) return toOutcome(status.error);
    const { view } = status.value;
    if (opts.json) {
      await writeFlushed(io.stdout, JSON.stringify(view) + '\n');
    } else {
      const epilogue = statusEpilogue(status.value, 'as last seen here (renewal age on our clock)', now);
      const head = `session ${plain(ts.id)} · ${plain(ts.address)}`;
      await writeFlushed(io.stdout, [head, ...hubLines(view), ...localLines(view, epilogue)].join('\n') + '\n');
    }
    if (view.hub === null) {
      return { exit: EXIT.noSession, code: 'session_not_found', message: `the Hub does not know session ${ts.id} (${view.hub_error}); oh-hai bridge registers a new one` };
    }
    return { exit: EXIT.ok };
  });
}
