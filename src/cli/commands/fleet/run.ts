import { type CliIO } from '../../io.js';
import { writeFlushed } from '../../../util/output.js';
import { success, toOutcome, type Outcome } from '../../../core/index.js';
import { fleetView, formatFleet, readMessagingKnobs, withAgentAccess, type AgentFlagValues } from '../../messaging/index.js';

export async function runFleet(opts: AgentFlagValues, io: CliIO): Promise<Outcome> {
  const knobs = readMessagingKnobs(io.env);
  if (!knobs.ok) return toOutcome(knobs.error);
  return withAgentAccess('oh-hai fleet', opts, io, async (a) => {
    const view = await fleetView(a, knobs.value, io.clock.now());
    if (!view.ok) return toOutcome(view.error);
    await writeFlushed(io.stdout, opts.json ? JSON.stringify(view.value) + '\n' : formatFleet(view.value));
    return success();
  });
}
