import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  parseConsumerRecord,
  parseConsumerSettings,
  parseIdentityRecord,
  parseReaderRecord,
  parseSessionRecord,
  readRecord,
  writeRecord,
  type ConsumerRecord,
  type ConsumerSettings,
  type ReaderRecord,
  type SessionRecord,
} from '../../../src/spool/index.js';
import type { Result } from '../../../src/core/result.js';
import type { Durability } from '../../../src/util/fs-durable.js';
import { tempDir } from './tmp.js';

const consumer: ConsumerRecord = {
  pid: 4242,
  host: 'host-a',
  start_time: '123456',
  mode: 'auto',
  started_at: 1_000,
  heartbeat_at: 2_000,
  transport: 'sse',
  policy: null,
  settings_digest: 'ab'.repeat(32),
  state: 'stopped',
  exit_code: 14,
  stop_reason: 'session_closed_by_operator',
  stop_message: 'a human closed the session',
  stopped_at: 3_000,
};

const reader: ReaderRecord = {
  pid: 10,
  host: 'h',
  start_time: null,
  starter_pid: 9,
  starter_start_time: '77',
  started_at: 1,
  heartbeat_at: 2,
  deadline_at: 570_001,
  declared_identity: true,
};

const session: SessionRecord = {
  id: 'sess_b',
  address: 'agent:agt_1#sess_b',
  name: 'builder-1',
  pinned: false,
  lease_seconds: 900,
  expires_at: '2026-09-18T14:33:07.000Z',
  renewed_at: 1_789_740_000_000,
  history: [{ id: 'sess_a', address: 'agent:agt_1#sess_a', replaced_at: 1_789_739_000_000, reason: 'session_lapsed' }],
};

const settings: ConsumerSettings = {
  hub: 'http://127.0.0.1:8080',
  agent_id: 'agt_1',
  session_key: 'builder-1',
  pinned: null,
  name: 'builder-1',
  transport: 'auto',
  interval_seconds: 5,
  max_retries: 8,
  unattended_max_seconds: 900,
  allow_from: ['agent:agt_2'],
  agent: null,
  leg: 'session',
};

describe('records', () => {
  function roundTrips<T>(name: string, value: T, parse: (x: unknown) => Result<T>, durability: Durability = 'durable'): void {
    const dir = tempDir();
    writeRecord(dir, name, value, durability);
    expect(readRecord(dir, name, parse)).toEqual({ state: 'ok', value });
    expect(statSync(path.join(dir, name)).mode & 0o777).toBe(0o600);
    expect(readFileSync(path.join(dir, name), 'utf8').endsWith('\n')).toBe(true);
    // Replaced by a rename either way: no temp file is left beside it.
    writeRecord(dir, name, value, durability);
    expect(readdirSync(dir)).toEqual([name]);
  }

  it('each record round-trips through writeRecord/readRecord, 0600', () => {
    roundTrips('consumer.json', consumer, parseConsumerRecord);
    roundTrips('reader.json', reader, parseReaderRecord);
    roundTrips('reader.json', reader, parseReaderRecord, 'none');
    roundTrips('session.json', session, parseSessionRecord);
    roundTrips('session.json', session, parseSessionRecord, 'whole');
    roundTrips('settings.json', settings, parseConsumerSettings);
    roundTrips('settings.json', { ...settings, pin_candidate: 'builder-1' }, parseConsumerSettings);
    roundTrips('settings.json', { ...settings, pin_candidate: null }, parseConsumerSettings);
    roundTrips(
      'identity.json',
      { hub: 'http://h', agent_id: 'agt_1', session_key: 'k', key_source: '--session', pinned: null, name: 'k' },
      parseIdentityRecord,
    );
  });

  it("a retrying connection's record keeps when its failures began and why, and reads an older one's without them", () => {
    const retrying = { attempt: 2, of: 8, at: 5000, since: 1000, reason: 'stream connect: network error: connect ECONNREFUSED 127.0.0.1:1' };
    roundTrips('consumer.json', { ...consumer, retrying }, parseConsumerRecord);
    const older = parseConsumerRecord({ ...consumer, retrying: { attempt: 2, of: 8, at: 5000 } });
    expect(older.ok && older.value.retrying).toEqual({ attempt: 2, of: 8, at: 5000, since: null, reason: null });
  });

  it('absent is absent', () => {
    expect(readRecord(tempDir(), 'consumer.json', parseConsumerRecord)).toEqual({ state: 'absent' });
  });

  it.each([
    ['garbage bytes', (p: string) => writeFileSync(p, '\u0000\u0001{not json')],
    ['an empty file', (p: string) => writeFileSync(p, '')],
    ['the wrong shape', (p: string) => writeFileSync(p, JSON.stringify({ ...consumer, pid: 'x' }))],
    ['a missing field', (p: string) => writeFileSync(p, JSON.stringify({ ...consumer, state: undefined }))],
    ['a JSON array', (p: string) => writeFileSync(p, '[]')],
    // tests run as root, where chmod 000 does not stop a read: a directory in the file's place does
    ['a directory in place of the file', (p: string) => mkdirSync(p)],
  ])('%s is unreadable, never absent', (_what, damage) => {
    const dir = tempDir();
    damage(path.join(dir, 'consumer.json'));
    const r = readRecord(dir, 'consumer.json', parseConsumerRecord);
    expect(r.state).toBe('unreadable');
    if (r.state === 'unreadable') expect(r.reason).toContain('consumer.json');
  });

  it('names the bad field', () => {
    const r = parseConsumerRecord({ ...consumer, transport: 'carrier-pigeon' });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.reason).toContain("'transport'");
    const s = parseSessionRecord({ ...session, history: [{ id: 'sess_a' }] });
    expect(s.ok).toBe(false);
    if (!s.ok) expect(s.reason).toMatch(/history\[0\]/);
  });

  it('drops fields it does not know', () => {
    const r = parseReaderRecord({ ...reader, extra: 1 });
    expect(r).toEqual({ ok: true, value: reader });
  });
});
