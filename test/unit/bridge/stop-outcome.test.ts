import { unlinkSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { consumerStopOutcome } from '../../../src/reader/stop-outcome.js';
import { openStateDir } from '../../../src/spool/index.js';
import { addressChange, spoolTransition } from '../../helpers/spool.js';
import { consumerRecord } from '../../helpers/records.js';
import { tempDir } from '../spool/tmp.js';

const NOW = 1_800_000_000_000;

describe("the reader's stop line for exit 10 (session_held)", () => {
  const held = consumerRecord({
    state: 'stopped',
    exit_code: 10,
    stop_reason: 'session_held',
    stop_message: 'stream connect on sess_b: held by pid 9 on host-b',
  });

  function entry() {
    const opened = openStateDir(tempDir(), { create: true });
    if (!opened.ok) throw new Error(opened.reason);
    opened.value.write('session', {
      id: 'sess_a',
      address: 'a#sess_a',
      name: null,
      pinned: false,
      lease_seconds: 900,
      expires_at: '2026-09-18T14:33:07.000Z',
      renewed_at: NOW - 10_000,
      history: [],
    });
    return opened;
  }

  it("names session.json's session and its lease when the spool names nothing past it", () => {
    const { value: stateDir } = entry();
    expect(consumerStopOutcome(held, stateDir, NOW).message).toBe(
      "stream connect on sess_b: held by pid 9 on host-b; in this state entry, its session sess_a expires 2026-09-18T14:33:07.000Z (Hub's clock; last renewed 10s ago)",
    );
  });

  it('names the session the spool names past it, which is the one the connection took up', () => {
    const { value: stateDir } = entry();
    spoolTransition(stateDir.dir, addressChange('sess_a', 'sess_b'));
    const message = consumerStopOutcome(held, stateDir, NOW).message;
    expect(message).toBe(
      'stream connect on sess_b: held by pid 9 on host-b; in this state entry, its session is sess_b, which replaced sess_a ' +
        '(session_lapsed; the spool records it, session.json not yet), with no renewal of it recorded here',
    );
  });

  it('after oh-hai session close removed session.json: names the session the spool names past the one stood down', () => {
    const { value: stateDir } = entry();
    stateDir.write('stoodDown', { sessions: [{ id: 'sess_a', address: 'a#sess_a', hub_state: 'closed', closed_at: null, stood_down_at: NOW - 5_000 }] });
    unlinkSync(stateDir.path('session.json'));
    expect(consumerStopOutcome(held, stateDir, NOW).message).toContain('in this state entry, no session');
    spoolTransition(stateDir.dir, addressChange('sess_a', 'sess_b'));
    expect(consumerStopOutcome(held, stateDir, NOW).message).toBe(
      'stream connect on sess_b: held by pid 9 on host-b; in this state entry, its session is sess_b, which replaced sess_a ' +
        '(session_lapsed; the spool records it, session.json not yet), with no renewal of it recorded here',
    );
  });
});
