import { Spool, type SpoolTransitionRecord } from '../../src/spool/index.js';
import { systemClock } from '../../src/util/clock.js';

/** The fields of an address change that say what changed: the spool adds the rest. */
export type AddressChange = Pick<SpoolTransitionRecord, 'from_session' | 'to_session' | 'from_address' | 'to_address' | 'reason'>;

/** Append an address_changed record to the spool in `dir` as a connection would; none may be running there. */
export function spoolTransition(dir: string, change: AddressChange): void {
  const spool = Spool.open(dir, { clock: systemClock });
  if (!spool.ok) throw new Error(spool.reason);
  try {
    spool.value.append([{ type: 'transition', event: 'address_changed', ...change }]);
  } finally {
    spool.value.close();
  }
}

/** The address change from `from` to `to` as a connection appends it: addresses `a#<session>`, reason session_lapsed. */
export const addressChange = (from: string, to: string) =>
  ({
    type: 'transition',
    event: 'address_changed',
    from_session: from,
    to_session: to,
    from_address: `a#${from}`,
    to_address: `a#${to}`,
    reason: 'session_lapsed',
  }) as const;
