import { describe, expect, it } from 'vitest';
import type { FleetRow } from '../../../src/hub/contract/index.js';
import { formatFleet } from '../../../src/cli/messaging/fleet-lines.js';
import { annotate } from '../../../src/cli/messaging/fleet-view.js';
import type { LocalAnnotation } from '../../../src/cli/messaging/local-state.js';

const row = (id: string): FleetRow => ({
  address: `agent:agt_a#${id}`,
  agent_id: 'agt_a',
  agent_label: 'builder',
  session_id: id,
  name: null,
  state: 'active',
  reachability: 'online',
  expires_at: '2026-09-18T14:48:07.000Z',
  last_renewed_at: '2026-09-18T14:33:07.000Z',
  holder: null,
});

const local = (over: Partial<LocalAnnotation>): LocalAnnotation => ({
  entry: '/state/e',
  consumer: 'live',
  consumer_note: null,
  consumer_pid: 7,
  consumer_heartbeat_age_ms: 100,
  reader_attending: true,
  reader_note: null,
  lag: 0,
  ...over,
});

describe('fleet rows and their local annotation', () => {
  const view = annotate([row('sess_live'), row('sess_dead'), row('sess_unknown'), row('sess_far')], {
    bySession: new Map([
      ['sess_live', local({})],
      [
        'sess_dead',
        local({ consumer: 'dead', consumer_note: 'pid 7 on h no longer exists', reader_attending: false, reader_note: 'no reader record', lag: 3 }),
      ],
      [
        'sess_unknown',
        local({
          consumer: 'unknown',
          consumer_note: 'the consumer record could not be read (garbage)',
          consumer_pid: null,
          reader_attending: null,
          reader_note: 'the reader record could not be read (garbage)',
          lag: null,
        }),
      ],
    ]),
    unmatched: [],
  });
  const lines = formatFleet(view).trimEnd().split('\n');

  it('says live / attending with the lag, DEAD with why, UNKNOWN / unknown, and no local state here', () => {
    expect(lines[0]).toBe(
      "agent:agt_a#sess_live (builder) · online · active, lease expires 2026-09-18T14:48:07.000Z (Hub's clock, last renewed 2026-09-18T14:33:07.000Z) · home found · consumer live (pid 7) / reader attending · 0 unread",
    );
    expect(lines[1]).toMatch(/· home found · consumer DEAD \(pid 7 on h no longer exists\) \/ reader not attending \(no reader record\) · 3 unread$/);
    expect(lines[2]).toMatch(
      /· home found · consumer UNKNOWN \/ reader unknown · unread unknown \(the spool or cursor could not be read\) — the consumer record could not be read \(garbage\); the reader record could not be read \(garbage\)$/,
    );
    expect(lines[3]).toMatch(/· no local state here$/);
  });

  it('puts null, not false, where a record could not be read', () => {
    const json = JSON.parse(JSON.stringify(view)) as { sessions: { local: Record<string, unknown> | null }[] };
    expect(json.sessions[1]!.local).toMatchObject({ consumer_alive: false, reader_attending: false, lag: 3 });
    expect(json.sessions[2]!.local).toMatchObject({ consumer_alive: null, reader_attending: null, lag: null });
    expect(json.sessions[3]!.local).toBeNull();
  });
});
