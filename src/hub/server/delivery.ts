import type { Delivery, Entry } from '../contract/index.js';
import { formatAddress, parseAddress, signCanonical, signEntry } from '../contract/index.js';
import type { HubCore } from './core.js';
import { entryOf, type EntryRow } from './entries.js';
import type { TamperMode } from './faults.js';
import { newId, newJti } from './ids.js';

/** How far in the past a `stale_t` tamper puts t: far outside any replay window. */
const STALE_T_SECONDS = 24 * 3600;

/** A field that belongs to another kind, for the `cross_type_field` tamper. */
const FOREIGN_FIELD: Record<Entry['kind'], [string, unknown]> = {
  directive: ['intent', 'notify'],
  message: ['status', 'acknowledged'],
  response: ['intent', 'ask'],
  receipt: ['intent', 'notify'],
};

/**
 * Signs every delivery afresh (§4: new t, new jti). Remembers the last jti so the
 * `replay_jti` fault can reuse it.
 */
export class Signer {
  private lastJti: string | null = null;

  constructor(private readonly core: Pick<HubCore, 'config' | 'clock' | 'faults'>) {}

  deliver(row: EntryRow, cls: 'drain' | 'stream'): Delivery {
    const tamper = this.core.faults.tamperFor(cls);
    if (tamper === null) return { entry: entryOf(row), signature: this.signature(row, null, null) };
    const entry = tamperEntry(entryOf(row), tamper);
    return { entry, signature: this.signature(row, entry, tamper) };
  }

  /**
   * The delivery as JSON text, serialised once: the entry is the row's stored JSON spliced in
   * as it is (it parses to the entry the signature covers), not parsed and written out again.
   * A row stored canonical (every row this build wrote) is signed over that text too: the
   * delivery never parses the entry.
   */
  deliveryJson(row: EntryRow, cls: 'drain' | 'stream'): string {
    const tamper = this.core.faults.tamperFor(cls);
    if (tamper === null) return `{"entry":${row.body},"signature":${JSON.stringify(this.signature(row, null, null))}}`;
    const entry = tamperEntry(entryOf(row), tamper);
    return `{"entry":${JSON.stringify(entry)},"signature":${JSON.stringify(this.signature(row, entry, tamper))}}`;
  }

  /**
   * The signature of one delivery of `entry` (the row's own when null, or a tampered copy). The
   * MAC covers the entry's canonical JSON: for an untampered row stored canonical that is its
   * body; otherwise (a row of an earlier build, a tamper fault) it is made from the entry.
   */
  private signature(row: EntryRow, entry: Entry | null, tamper: TamperMode | null): string {
    let t = Math.floor(this.core.clock.now() / 1000);
    let jti = newJti();
    if (tamper === 'stale_t') t -= STALE_T_SECONDS;
    if (tamper === 'replay_jti' && this.lastJti !== null) jti = this.lastJti;
    const key = this.core.config.signingKey;
    let signature = entry === null && row.canonical === 1 ? signCanonical(key, row.body, t, jti) : signEntry(key, entry ?? entryOf(row), t, jti);
    if (tamper === 'signature_syntax') signature = signature.replace(/^t=(\d+),jti=([^,]+),/, 'jti=$2,t=$1,');
    this.lastJti = jti;
    return signature;
  }
}

function tamperEntry(entry: Entry, mode: TamperMode): Entry {
  const e = { ...entry } as Record<string, unknown>;
  const to = parseAddress(entry.to);
  const agentId = to.ok ? to.value.agentId : 'agt_unknown';
  const sessionId = to.ok ? to.value.sessionId : null;
  switch (mode) {
    case 'cross_type_field': {
      const [k, v] = FOREIGN_FIELD[entry.kind];
      e[k] = v;
      break;
    }
    case 'unknown_field':
      e.x_extra = 'tampered';
      break;
    case 'wrong_agent':
      e.to = formatAddress(newId('agt'), sessionId);
      break;
    case 'wrong_session':
      e.to = formatAddress(agentId, newId('sess'));
      break;
    default:
      break;
  }
  return e as unknown as Entry;
}
