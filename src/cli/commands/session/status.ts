import type { HubFailure } from '../../../hub/client/index.js';
import type { Session } from '../../../hub/contract/index.js';
import { isSameProcessAlive, openStateEntry, type SessionRecord } from '../../../spool/index.js';
import { EXIT } from '../../exit-codes.js';
import { writeFlushed, type CliIO } from '../../io.js';
import { toOutcome, type Outcome } from '../../outcome.js';
import { leaseEpilogue } from '../bridge/epilogue.js';
import { plain } from '../bridge/summary.js';
import { annotateEntry, type LocalAnnotation } from '../fleet/local-state.js';
import { hubFailureError, readMessagingKnobs, withAgentAccess, type AgentFlagValues } from '../messaging/index.js';

const NAME = 'oh-hai session status';

interface StatusView {
  session_id: string;
  /** The Hub's record: the authority on the session's state. Its instants are the Hub's clock. */
  hub: Session | null;
  hub_error: string | null;
  /** This host's record: `expires_at` as last seen (the Hub's clock), `renewed_at` and ages on our clock. */
  local: { record: SessionRecord | null; annotation: LocalAnnotation } | null;
}

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
    const opened = ts.entryDir !== null ? openStateEntry(ts.entryDir, { create: false }) : null;
    const entry = opened?.ok ? opened.value : null;
    const now = io.clock.now();

    const got = await a.client.getSession(ts.id);
    const failure: HubFailure | null = got.ok ? null : got.failure;
    if (failure && !(failure.kind === 'http' && failure.status === 404)) {
      return toOutcome(hubFailureError(failure, { hubUrl: a.hubUrl, credential: a.credential.source, doing: `reading session ${ts.id}` }));
    }
    const sessionRead = entry?.read('session') ?? null;
    const consumer = entry?.read('consumer') ?? null;
    const view: StatusView = {
      session_id: ts.id,
      hub: got.ok ? got.value : null,
      hub_error: failure?.kind === 'http' ? `${failure.status} ${failure.code}: ${failure.message}` : null,
      local: entry
        ? {
            record: sessionRead?.state === 'ok' ? sessionRead.value : null,
            annotation: annotateEntry(entry.dir, { nowMs: now, staleMs: knobs.value.staleHolderSeconds * 1000, liveness: isSameProcessAlive }),
          }
        : null,
    };
    if (opts.json) {
      await writeFlushed(io.stdout, JSON.stringify(view) + '\n');
    } else {
      const epilogue =
        entry && sessionRead && consumer
          ? leaseEpilogue('as last seen here (renewal age on our clock)', sessionRead, { record: consumer, alive: consumer.state === 'ok' ? isSameProcessAlive(consumer.value) : 'unknown' }, now)
          : [];
      const head = `session ${plain(ts.id)} · ${plain(ts.address)}`;
      await writeFlushed(io.stdout, [head, ...hubLines(view), ...localLines(view, epilogue)].join('\n') + '\n');
    }
    if (!got.ok) {
      return { exit: EXIT.noSession, code: 'session_not_found', message: `the Hub does not know session ${ts.id} (${view.hub_error}); oh-hai bridge registers a new one` };
    }
    return { exit: EXIT.ok };
  });
}
