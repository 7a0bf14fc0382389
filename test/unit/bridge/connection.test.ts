import { describe, expect, it } from 'vitest';
import { planConnection, type ConnectionFacts } from '../../../src/reader/connection.js';
import type { ConsumerRecord, ConsumerSettings } from '../../../src/spool/records.js';
import { consumerRecord, consumerSettings } from '../../helpers/records.js';

const rec = (over: Partial<ConsumerRecord> = {}): ConsumerRecord =>
  consumerRecord({ start_time: '5', started_at: 1, heartbeat_at: 2, policy: ['any-in-account'], ...over });
const settings = (over: Partial<ConsumerSettings> = {}): ConsumerSettings => consumerSettings({ allow_from: ['any-in-account'], ...over });
const none = { allowFrom: false, transport: false, interval: false, maxRetries: false };
const facts = (over: Partial<ConnectionFacts> = {}): ConnectionFacts => ({
  consumer: { state: 'ok', value: rec() },
  alive: 'alive',
  reported: null,
  running: settings(),
  wanted: settings(),
  named: none,
  ...over,
});

describe('one consumer per entry: adopt, report or start', () => {
  it('no record: start', () => expect(planConnection(facts({ consumer: { state: 'absent' } }))).toEqual({ kind: 'start', note: null }));

  it('an unreadable record: start, and let the lock decide', () => {
    const p = planConnection(facts({ consumer: { state: 'unreadable', reason: 'garbage' } }));
    expect(p.kind).toBe('start');
    expect(p.kind === 'start' && p.note).toContain('could not read');
  });

  it('a live one is adopted by a flagless run, which says what it adopted', () => {
    const p = planConnection(facts({ running: settings({ transport: 'poll' }), wanted: settings({ transport: 'sse', allow_from: null }) }));
    expect(p.kind).toBe('adopt');
    expect(p.kind === 'adopt' && p.note).toMatch(
      /adopting the running background connection \(pid 777 on host-a; policy any-in-account, transport poll\) — a flagless run uses what is running/,
    );
  });

  it('a live one on another host is adopted too (only a heartbeat can age it out)', () => {
    expect(planConnection(facts({ alive: 'unknown' })).kind).toBe('adopt');
  });

  it('a named flag that disagrees is a conflict naming both values and the fix', () => {
    const cases: [Partial<ConnectionFacts>, RegExp][] = [
      [
        { named: { ...none, allowFrom: true }, wanted: settings({ allow_from: ['agent:agt_x'] }) },
        /--allow-from asks for agent:agt_x, but it enforces any-in-account/,
      ],
      [
        { named: { ...none, transport: true }, wanted: settings({ transport: 'poll' }), running: settings({ transport: 'sse' }) },
        /--transport poll, but it runs with transport sse/,
      ],
      [{ named: { ...none, interval: true }, wanted: settings({ interval_seconds: 1 }) }, /--interval 1, but it runs with interval 5/],
      [{ named: { ...none, maxRetries: true }, wanted: settings({ max_retries: 2 }) }, /--max-retries 2, but it runs with max retries 8/],
    ];
    for (const [over, want] of cases) {
      const p = planConnection(facts(over));
      expect(p.kind).toBe('conflict');
      expect(p.kind === 'conflict' && p.message).toMatch(want);
      expect(p.kind === 'conflict' && p.message).toContain('oh-hai session close --keep-connection');
    }
  });

  it('policies compare by meaning, not by spelling', () => {
    const p = planConnection(
      facts({
        consumer: { state: 'ok', value: rec({ policy: ['agent:b', 'agent:a'] }) },
        named: { ...none, allowFrom: true },
        wanted: settings({ allow_from: ['agent:a', 'agent:b', 'agent:a'] }),
      }),
    );
    expect(p.kind).toBe('adopt');
  });

  it('named flags that agree adopt; settings it cannot verify are said so, not guessed', () => {
    expect(planConnection(facts({ named: { ...none, transport: true } })).kind).toBe('adopt');
    const p = planConnection(facts({ named: { ...none, transport: true }, running: null, wanted: settings({ transport: 'poll' }) }));
    expect(p.kind === 'adopt' && p.note).toContain('only --allow-from could be checked');
  });

  it('a stopped one with a failure code not yet relayed is reported (its leftovers, then its code)', () => {
    const stopped = rec({ state: 'stopped', exit_code: 12, stop_reason: 'verification_failed', stopped_at: 9 });
    expect(planConnection(facts({ consumer: { state: 'ok', value: stopped } }))).toEqual({ kind: 'report', record: stopped });
    // Once relayed, the next run starts afresh.
    const again = planConnection(facts({ consumer: { state: 'ok', value: stopped }, reported: { pid: 777, start_time: '5', stopped_at: 9 } }));
    expect(again.kind).toBe('start');
  });

  it('a 13 nobody relayed is history: the run tries the Hub again instead of exiting 13 about it', () => {
    const gaveUp = rec({ state: 'stopped', exit_code: 13, stop_reason: 'unreachable', stopped_at: 9 });
    const p = planConnection(facts({ consumer: { state: 'ok', value: gaveUp } }));
    expect(p).toEqual({ kind: 'start', note: 'the previous background connection (pid 777) gave up on an unreachable Hub (exit 13); trying the Hub again' });
  });

  it('a 14 nobody relayed is asked of the Hub again: a human may have lifted the stop since', () => {
    const closed = rec({ state: 'stopped', exit_code: 14, stop_reason: 'session_closed_by_operator', stopped_at: 9 });
    const p = planConnection(facts({ consumer: { state: 'ok', value: closed } }));
    expect(p).toEqual({
      kind: 'start',
      note: 'the previous background connection (pid 777) stopped on the operator kill-switch (exit 14); asking the Hub whether a human lifted it',
    });
  });

  it('a clean stop (exit 0) and a crash are replaced at once', () => {
    const clean = planConnection(facts({ consumer: { state: 'ok', value: rec({ state: 'stopped', exit_code: 0, stop_reason: 'unattended' }) } }));
    expect(clean.kind === 'start' && clean.note).toContain('stopped (unattended)');
    const crashed = planConnection(facts({ alive: 'dead' }));
    expect(crashed.kind === 'start' && crashed.note).toContain('died without recording a stop');
  });
});
