import type { Coded } from '../../core/index.js';
import type { FleetRow } from '../../hub/contract/index.js';
import { isSameProcessAlive } from '../../spool/index.js';
import type { AgentAccess } from './access.js';
import { hubFailureError } from './failures.js';
import type { MessagingKnobs } from './access.js';
import { scanLocalState, type LocalAnnotation, type LocalScan } from './local-state.js';
import { failureContext } from './send.js';

/** A Hub row with what this host's state says about it; `local: null` is "no local state here". */
export interface AnnotatedRow extends FleetRow {
  local: {
    entry: string;
    /** true live, false dead, null unknown (the record exists and could not be read, or is another host's). */
    consumer_alive: boolean | null;
    consumer_pid: number | null;
    consumer_note: string | null;
    reader_attending: boolean | null;
    reader_note: string | null;
    lag: number | null;
  } | null;
}

export interface FleetView {
  sessions: AnnotatedRow[];
  /** Local session entries whose session record could not be read, so no row could be matched to them. */
  unmatched_local_entries: { entry: string; reason: string }[];
}

const ALIVE: Record<LocalAnnotation['consumer'], boolean | null> = { live: true, dead: false, unknown: null };

export function annotate(rows: readonly FleetRow[], scan: LocalScan): FleetView {
  return {
    sessions: rows.map((row) => {
      const a = scan.bySession.get(row.session_id);
      if (!a) return { ...row, local: null };
      return {
        ...row,
        local: {
          entry: a.entry,
          consumer_alive: ALIVE[a.consumer],
          consumer_pid: a.consumer_pid,
          consumer_note: a.consumer_note,
          reader_attending: a.reader_attending,
          reader_note: a.reader_note,
          lag: a.lag,
        },
      };
    }),
    unmatched_local_entries: scan.unmatched,
  };
}

/** The Hub's fleet (GET /v1/fleet) with this host's local state beside each row: `oh-hai fleet ls` and `oh_hai_fleet`. */
export async function fleetView(a: AgentAccess, knobs: MessagingKnobs, nowMs: number): Promise<Coded<FleetView>> {
  const r = await a.client.fleet();
  if (!r.ok) return { ok: false, error: hubFailureError(r.failure, failureContext(a, 'listing the fleet', 'GET /v1/fleet')) };
  const scan = scanLocalState(a.stateRoot, { nowMs, staleMs: knobs.staleHolderSeconds * 1000, liveness: isSameProcessAlive });
  return { ok: true, value: annotate(r.value, scan) };
}
