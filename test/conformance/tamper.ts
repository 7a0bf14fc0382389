import { expect } from 'vitest';
import type { RunResult } from '../helpers/cli.js';
import type { PeerHub, PeerHubOptions, PeerKnobs } from '../peer-hub/index.js';
import { bridge, directive, live, party, peerHub, type Party } from './world.js';

/** What a test sees after the peer Hub delivered one directive under a violation. */
export interface Tampered {
  hub: PeerHub;
  a: Party;
  session: string;
  entry: string;
  /** The bridge run after the delivery; null when the caller asked for no reader. */
  run: RunResult | null;
}

/**
 * Register a bridge session, switch on one violation, deliver one directive to the session
 * and (unless `read` is false) run the bridge once more. `arm` gets the party and its
 * session id, so a violation can name them.
 */
export async function deliverTampered(
  arm: (hub: PeerHub, a: Party, session: string) => Partial<Pick<PeerKnobs, 'reshapeEntry' | 'tamperSignature'>>,
  hubOptions: PeerHubOptions = {},
  read = true,
): Promise<Tampered> {
  const hub = await peerHub(hubOptions);
  const a = party(hub, 'verifier');
  const first = await bridge(a, 'v', ['--wait', '0.5']);
  expect(first.code, first.stderr).toBe(0);
  const session = (await live(hub, a, 'v')).id;
  Object.assign(hub.knobs, arm(hub, a, session));
  const m = await directive(hub, `agent:${a.id}#${session}`, 'tampered on the way');
  const entry = hub.store.messages.get(m)!.entryId!;
  const run = read ? await bridge(a, 'v', ['--wait', '20']) : null;
  return { hub, a, session, entry, run };
}

/** Exit 12, nothing printed, and the entry never acknowledged at the Hub (not even as delivered). */
export function expectRefused(t: Tampered): void {
  const run = t.run!;
  expect(run.code, run.stderr).toBe(12);
  expect(run.stdout).toBe('');
  expect(run.stderr).toMatch(/^oh-hai bridge: FATAL \(exit 12\b/m);
  const e = t.hub.store.entry(t.entry)!;
  expect([e.delivered, e.acknowledged]).toEqual([false, false]);
}
