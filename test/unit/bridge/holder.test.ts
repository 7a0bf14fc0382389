import { describe, expect, it } from 'vitest';
import { decideHolder, readerRefusal, type HolderFacts } from '../../../src/reader/holder.js';
import type { ReaderRecord, RecordRead, SessionRecord } from '../../../src/spool/records.js';
import { readerRecord } from '../../helpers/records.js';

const NOW = 1_800_000_000_000;
const reader = (over: Partial<ReaderRecord> = {}): RecordRead<ReaderRecord> => ({
  state: 'ok',
  value: readerRecord({
    pid: 4242,
    start_time: '99',
    starter_pid: 4000,
    starter_start_time: '98',
    started_at: NOW - 190_000,
    heartbeat_at: NOW - 2_000,
    deadline_at: NOW + 100_000,
    declared_identity: false,
    ...over,
  }),
});
const facts = (over: Partial<HolderFacts> = {}): HolderFacts => ({
  record: reader(),
  writtenAt: NOW - 2_000,
  alive: 'alive',
  starterAlive: 'alive',
  nowMs: NOW,
  staleMs: 60_000,
  ...over,
});

describe('reader displacement table', () => {
  const cases: [string, Partial<HolderFacts>, boolean, ReturnType<typeof decideHolder>][] = [
    ['no record', { record: { state: 'absent' } }, false, { action: 'claim' }],
    ['dead holder', { alive: 'dead' }, false, { action: 'displace', why: 'dead', signal: false, pid: 4242 }],
    ['orphaned holder', { starterAlive: 'dead' }, false, { action: 'displace', why: 'orphaned', signal: true, pid: 4242 }],
    ['stale heartbeat', { record: reader({ heartbeat_at: NOW - 61_000 }) }, false, { action: 'displace', why: 'stale', signal: true, pid: 4242 }],
    ['past its deadline', { record: reader({ deadline_at: NOW - 1 }) }, false, { action: 'displace', why: 'past_deadline', signal: true, pid: 4242 }],
    ['live, declared identity', {}, true, { action: 'displace', why: 'declared', signal: true, pid: 4242 }],
    ['live, key from the host program', {}, false, { action: 'refuse' }],
    ['live on another host, declared', { alive: 'unknown', starterAlive: 'unknown' }, true, { action: 'displace', why: 'declared', signal: false, pid: 4242 }],
    ['live on another host, host key', { alive: 'unknown', starterAlive: 'unknown' }, false, { action: 'refuse' }],
    [
      'stale on another host',
      { alive: 'unknown', starterAlive: 'unknown', record: reader({ heartbeat_at: NOW - 61_000 }) },
      false,
      { action: 'displace', why: 'stale', signal: false, pid: 4242 },
    ],
    ['unreadable and fresh, host key', { record: { state: 'unreadable', reason: 'garbage' } }, false, { action: 'refuse' }],
    [
      'unreadable and fresh, declared',
      { record: { state: 'unreadable', reason: 'garbage' } },
      true,
      { action: 'displace', why: 'unreadable_declared', signal: false, pid: null },
    ],
    [
      'unreadable and untouched past the stale bound',
      { record: { state: 'unreadable', reason: 'garbage' }, writtenAt: NOW - 61_000 },
      false,
      { action: 'displace', why: 'unreadable_stale', signal: false, pid: null },
    ],
  ];
  for (const [name, over, declared, want] of cases) {
    it(name, () => expect(decideHolder(facts(over), declared)).toEqual(want));
  }
});

describe('exit-10 refusal text', () => {
  const lease: RecordRead<SessionRecord> = {
    state: 'ok',
    value: {
      id: 'sess_abc',
      address: 'agent:a#sess_abc',
      name: null,
      pinned: false,
      lease_seconds: 900,
      expires_at: '2026-09-18T14:33:07.000Z',
      renewed_at: NOW - 20_000,
      history: [],
    },
  };
  it('names the holder: pid, host, how long it has held, heartbeat age and the lease', () => {
    const m = readerRefusal({ facts: facts(), session: lease, keyFrom: 'claude pid 4000', readerPath: '/s/reader.json' });
    expect(m).toContain('pid 4242 on host-a, holding for 3m 10s, heartbeat 2s ago');
    expect(m).toContain("its session sess_abc expires 2026-09-18T14:33:07.000Z (Hub's clock; last renewed 20s ago)");
    expect(m).toContain('(claude pid 4000)');
    expect(m).toContain('Do not kill it');
    expect(m).toContain('--session <name>');
  });
  it('says the record could not be read — never "pid unknown"', () => {
    const m = readerRefusal({
      facts: facts({ record: { state: 'unreadable', reason: '/s/reader.json is not valid JSON (3 bytes)' } }),
      session: { state: 'absent' },
      keyFrom: 'claude pid 4000',
      readerPath: '/s/reader.json',
    });
    expect(m).toContain("another reader's record exists and could not be read (/s/reader.json is not valid JSON (3 bytes), last written 2s ago)");
    expect(m).toContain('no session recorded in this state entry yet');
    expect(m).not.toMatch(/pid unknown/i);
  });
});
