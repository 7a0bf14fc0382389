import { isSameProcessAlive } from '../../../spool/index.js';
import { writeFlushed, type CliIO } from '../../io.js';
import { success, toOutcome, type Outcome } from '../../outcome.js';
import { hubFailureError, readMessagingKnobs, withAgentAccess, type AgentFlagValues } from '../messaging/index.js';
import { annotate, formatFleet } from './format.js';
import { scanLocalState } from './local-state.js';

export async function runFleet(opts: AgentFlagValues, io: CliIO): Promise<Outcome> {
  const knobs = readMessagingKnobs(io.env);
  if (!knobs.ok) return toOutcome(knobs.error);
  return withAgentAccess('oh-hai fleet', opts, io, async (a) => {
    const r = await a.client.fleet();
    if (!r.ok) return toOutcome(hubFailureError(r.failure, { hubUrl: a.hubUrl, credential: a.credential.source, doing: 'listing the fleet (GET /v1/fleet)' }));
    const scan = scanLocalState(a.stateRoot, { nowMs: io.clock.now(), staleMs: knobs.value.staleHolderSeconds * 1000, liveness: isSameProcessAlive });
    const view = annotate(r.value, scan);
    await writeFlushed(io.stdout, opts.json ? JSON.stringify(view) + '\n' : formatFleet(view));
    return success();
  });
}
