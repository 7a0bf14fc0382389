import type { ConsumerRecord, ConsumerSettings, ReaderRecord } from '../../src/spool/index.js';

/**
 * State-entry records for tests with every field filled — a running auto-mode consumer, an
 * attending reader with a declared key, session-leg settings — so a test names only what it
 * is about (its stamp, its instants, the field under test).
 */

export const consumerRecord = (over: Partial<ConsumerRecord> = {}): ConsumerRecord => ({
  pid: 777,
  host: 'host-a',
  start_time: '1',
  mode: 'auto',
  started_at: 0,
  heartbeat_at: 0,
  transport: 'sse',
  policy: null,
  settings_digest: 'd',
  state: 'running',
  exit_code: null,
  stop_reason: null,
  stop_message: null,
  stopped_at: null,
  ...over,
});

export const readerRecord = (over: Partial<ReaderRecord> = {}): ReaderRecord => ({
  pid: 100,
  host: 'host-a',
  start_time: '11',
  starter_pid: 50,
  starter_start_time: '5',
  started_at: 0,
  heartbeat_at: 0,
  deadline_at: 0,
  declared_identity: true,
  ...over,
});

export const consumerSettings = (over: Partial<ConsumerSettings> = {}): ConsumerSettings => ({
  hub: 'http://127.0.0.1:9',
  agent_id: 'agt_1',
  session_key: 'k',
  pinned: null,
  name: 'k',
  transport: 'auto',
  interval_seconds: 5,
  max_retries: 8,
  unattended_max_seconds: 900,
  allow_from: null,
  agent: null,
  leg: 'session',
  ...over,
});
