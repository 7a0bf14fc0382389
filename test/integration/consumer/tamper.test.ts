import { describe, expect, it } from 'vitest';
import { FAST_HUB, useBenches, waitFor } from './harness.js';

/**
 * A hostile or buggy Hub: each tamper mode alters one outgoing delivery. The consumer must
 * stop with 12 naming the entry and the check, and spool nothing of it; the Hub keeps it.
 */
const world = useBenches({ args: FAST_HUB, faults: true });

const MODES = [
  ['signature_syntax', 'signature_syntax', /expected t=/],
  ['stale_t', 'replay_window', /outside the 120 s replay window.*clocks agree/],
  ['cross_type_field', 'entry_shape', /'status'/],
  ['unknown_field', 'entry_shape', /x_extra/],
  ['wrong_agent', 'addressing', /another agent/],
  ['wrong_session', 'addressing', /another or a prior session/],
] as const;

describe.each(['sse', 'poll'] as const)('tampered deliveries over %s', (transport) => {
  for (const [tamper, check, detail] of MODES) {
    it(`${tamper} → 12 (${check}), nothing spooled, nothing acked`, async () => {
      const bench = await world.bench();
      bench.settings({ transport, interval_seconds: 0.1 });
      const p = bench.start();
      await bench.waitRunning();
      await world.hub.faults([{ class: transport === 'sse' ? 'stream' : 'drain', action: 'tamper', tamper, count: 1 }]);
      const id = await bench.notify(`victim of ${tamper}`);
      const { record, code } = await bench.waitStopped(p);
      expect({ code, exit: record.exit_code, reason: record.stop_reason }).toEqual({ code: 12, exit: 12, reason: 'verification_failed' });
      expect(record.stop_message).toMatch(new RegExp(`^entry ent_\\w+ failed verification \\(${check}\\)`));
      expect(record.stop_message).toMatch(detail);
      expect(record.stop_message).toMatch(/Possible tampering/);
      expect(bench.entries()).toEqual([]);
      expect(bench.ledgerLive()).toEqual([]);
      expect((await bench.track(id)).state).toBe('queued');
    });
  }
});

describe('replayed jti', () => {
  it('a jti already used by an earlier delivery → 12, and the replayed entry is not spooled', async () => {
    const bench = await world.bench();
    bench.settings();
    const p = bench.start();
    await bench.waitRunning();
    await bench.notify('the original');
    await waitFor(() => bench.entries().length === 1, { what: 'the original spooled' });
    await world.hub.faults([{ class: 'stream', action: 'tamper', tamper: 'replay_jti', count: 1 }]);
    const id = await bench.notify('the replay victim');
    const { record, code } = await bench.waitStopped(p);
    expect({ code, reason: record.stop_reason }).toEqual({ code: 12, reason: 'verification_failed' });
    expect(record.stop_message).toMatch(/failed verification \(jti_replayed\): jti \S+ .*was already used/);
    expect(bench.entries().map((e) => e.entry?.text)).toEqual(['the original']);
    expect((await bench.track(id)).state).toBe('queued');
  });
});

describe("the Hub's clock disagrees with ours", () => {
  it('a stale t from a Hub whose clock is an hour off → 12, and the message says the clocks disagree rather than accusing the entry', async () => {
    const skewed = await world.ownHub({ args: [...FAST_HUB, '--clock-offset-ms', String(-3_600_000)] });
    const bench = await world.bench({ on: skewed });
    bench.settings();
    const p = bench.start();
    await bench.waitRunning();
    await bench.notify('from the past');
    const { record, code } = await bench.waitStopped(p);
    expect(code).toBe(12);
    expect(record.stop_message).toMatch(/\(replay_window\): t=\d+ .* older than our clock/);
    expect(record.stop_message).toMatch(/The Hub's clock reads −36\d\d\.\d s relative to ours .*the two clocks disagree.*check this machine's time/);
    expect(bench.entries()).toEqual([]);
  });
});
