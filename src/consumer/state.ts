import { EXIT, type Result } from '../core/index.js';
import { ENTRY_FILES, Ledger, SeenJti, type Spool, type StateEntry } from '../spool/index.js';
import type { Clock } from '../util/clock.js';
import { stop, type Stop } from './stops.js';

/** The files only the lock holder writes, opened (and their tails recovered) together. */
export interface DrainState {
  spool: Spool;
  ledger: Ledger;
  seen: SeenJti;
  close(): void;
}

export function openDrainState(entry: StateEntry, clock: Clock, log: (text: string) => void): Result<DrainState, { stop: Stop }> {
  const spool = entry.openSpool(clock);
  if (!spool.ok) return { ok: false, stop: stop(EXIT.internal, 'spool_write_failed', spool.reason) };
  const ledger = Ledger.open(entry.dir);
  if (!ledger.ok) {
    spool.value.close();
    return { ok: false, stop: stop(EXIT.internal, 'spool_write_failed', ledger.reason) };
  }
  if (ledger.value.recovery) log(`ledger recovered: cut ${ledger.value.recovery.cutBytes} bytes at byte ${ledger.value.recovery.cutAt}`);
  const seen = SeenJti.load(entry.dir);
  if (!seen.ok) {
    spool.value.close();
    ledger.value.close();
    return {
      ok: false,
      stop: stop(
        EXIT.internal,
        'state_unreadable',
        `${seen.reason}; without it a replayed delivery could pass, so the consumer will not start. Remove ${entry.path(ENTRY_FILES.seenJti)} once you have checked nothing else in the entry is damaged`,
      ),
    };
  }
  return {
    ok: true,
    value: {
      spool: spool.value,
      ledger: ledger.value,
      seen: seen.value,
      close: () => {
        spool.value.close();
        ledger.value.close();
      },
    },
  };
}
