import { type CliIO } from '../../io.js';
import { writeFlushed } from '../../../util/output.js';
import { success, toOutcome, type Outcome } from '../../../core/index.js';
import { formatTable, PLAIN } from '../../terminal/index.js';
import { agentCells, agentsView, fleetView, formatFleet, readMessagingKnobs, withAgentAccess, type AgentFlagValues } from '../../messaging/index.js';

export interface FleetOptions extends AgentFlagValues {
  sessions?: boolean;
}

/** `oh-hai fleet ls`: every agent of the account; `--sessions`: every live session, annotated from this host. */
export async function runFleet(opts: FleetOptions, io: CliIO): Promise<Outcome> {
  const knobs = readMessagingKnobs(io.env);
  if (!knobs.ok) return toOutcome(knobs.error);
  return withAgentAccess('oh-hai fleet', opts, io, async (a) => {
    if (opts.sessions) {
      const view = await fleetView(a, knobs.value, io.clock.now());
      if (!view.ok) return toOutcome(view.error);
      if (!opts.json) {
        await writeFlushed(io.stdout, formatFleet(view.value, io.terminal?.stdout));
        return success();
      }
      // The array is the document; an entry that matched no row is a diagnostic, said where the text says it.
      for (const u of view.value.unmatched_local_entries)
        io.stderr.write(`oh-hai fleet: local state entry ${u.entry}: its session record could not be read (${u.reason})\n`);
      await writeFlushed(io.stdout, JSON.stringify(view.value.sessions) + '\n');
      return success();
    }
    const view = await agentsView(a, new Date(io.clock.now()).toISOString());
    if (!view.ok) return toOutcome(view.error);
    if (view.value.partial !== null) io.stderr.write(`oh-hai fleet: ${view.value.partial}\n`);
    if (opts.json) {
      await writeFlushed(io.stdout, JSON.stringify(view.value.agents) + '\n');
      return success();
    }
    if (view.value.agents.length === 0) {
      await writeFlushed(io.stdout, 'no agents in this account yet (a human mints one: oh-hai hub agent add <label>)\n');
      return success();
    }
    await writeFlushed(io.stdout, formatTable(agentCells(view.value.agents), io.terminal?.stdout ?? PLAIN));
    return success();
  });
}
