import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Reader, StopRequest, type ReaderLeg, type SignalSource } from '../../../src/reader/index.js';
import { ioCounts, openStateDir, resetIoCounts, type ConsumerSettings, type IoCounts, type SessionRecord, type StateDir } from '../../../src/spool/index.js';
import type { Output } from '../../../src/util/output.js';
import { systemClock, type Timers } from '../../../src/util/clock.js';
import { waitFor } from '../../helpers/wait.js';

/**
 * What a waiting reader's wake costs in state-file I/O, counted (src/spool/io-counts.ts), not
 * timed: one read of the spool, held open since before the sleep (not a `pending()` read and then a print read, and no open), no segment
 * listing, and no open of session.json, stood-down.json or the directory cache unless one of
 * them changed while it slept (it read them before sleeping). A real Reader on real files in
 * this process; the test plays the background connection by appending to the spool.
 */

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const WAIT_MS = 600_000;
const SIG = 't=1,jti=abcdefghijklmnop,alg=hmac-sha256,v1=' + '0'.repeat(64);

const session = (id: string, history: SessionRecord['history'] = []): SessionRecord => ({
  id,
  address: `agent:agt_me#${id}`,
  name: null,
  pinned: false,
  lease_seconds: 3600,
  expires_at: '2026-12-02T01:00:00Z',
  renewed_at: 0,
  history,
});

const entry = (id: string, underSession: string) => ({
  type: 'entry' as const,
  session: underSession,
  signature: SIG,
  entry: {
    id,
    kind: 'message' as const,
    from: 'agent:agt_peer#sess_peer',
    to: `agent:agt_me#${underSession}`,
    created_at: '2026-09-18T14:33:07.000Z',
    message_id: `msg_${id}`,
    intent: 'notify' as const,
    text: `hello ${id}`,
  },
});

/** stdout that keeps each line with the state-file I/O counted by the time it was written. */
class Stdout implements Output {
  readonly lines: { text: string; io: IoCounts }[] = [];
  write(text: string, cb?: (err?: Error | null) => void): boolean {
    this.lines.push({ text, io: ioCounts() });
    setImmediate(() => cb?.(null));
    return true;
  }
  on(): this {
    return this;
  }
}

const sink: Output = { write: (_t, cb) => (setImmediate(() => cb?.(null)), true), on: () => sink };
const noSignals: SignalSource = { on: () => undefined, off: () => undefined };

function world() {
  const root = mkdtempSync(path.join(os.tmpdir(), 'oh-hai-wake-io-'));
  dirs.push(root);
  const opened = openStateDir(path.join(root, 'entry'), { create: true });
  if (!opened.ok) throw new Error(opened.reason);
  const stateDir: StateDir = opened.value;
  const spool = stateDir.openSpool(systemClock);
  if (!spool.ok) throw new Error(spool.reason);
  stateDir.write('session', session('sess_a'));
  const stdout = new Stdout();
  // The reader is asleep once it has set its deadline: the watch is armed and what labels a line read.
  let asleep: () => void = () => undefined;
  const sleeping = new Promise<void>((resolve) => (asleep = resolve));
  const clock: Timers = {
    ...systemClock,
    setTimer: (ms, fn) => {
      const cancel = systemClock.setTimer(ms, fn);
      if (ms > WAIT_MS / 2) setImmediate(asleep);
      return cancel;
    },
  };
  const wanted: ConsumerSettings = {
    hub: 'http://127.0.0.1:9',
    agent_id: 'agt_me',
    session_key: 'wake-io',
    pinned: null,
    name: null,
    transport: 'sse',
    interval_seconds: 2,
    max_retries: 5,
    unattended_max_seconds: 3600,
    allow_from: null,
    agent: null,
    leg: 'session',
  };
  const leg: ReaderLeg = {
    name: 'oh-hai bridge',
    logName: 'reader',
    stateDir,
    declared: false,
    waitMs: WAIT_MS,
    wanted,
    named: { allowFrom: false, transport: false, interval: false, maxRetries: false },
    warnings: [],
    refusal: () => ({ exit: 10, code: 'reader_held', message: 'held' }),
    noPolicyLine: () => 'no policy',
    directory: { stateRoot: root, hubUrl: 'http://127.0.0.1:9', agentId: 'agt_me' },
    epilogue: () => [],
  };
  const stop = new StopRequest(noSignals);
  const run = new Reader({
    leg,
    io: { stdout, stderr: sink, env: {}, clock, self: { execPath: process.execPath, args: [] }, pid: process.pid },
    stop,
    knobs: { heartbeatMs: WAIT_MS, staleMs: 3 * WAIT_MS, graceSeconds: 5 },
    raw: false,
    // The "connection" is this test, appending to the spool itself.
    launch: async () => ({ ok: true, value: { pid: process.pid } }),
  }).execute();
  return { stateDir, spool: spool.value, stdout, sleeping, run };
}

describe('a waiting reader woken by an append', () => {
  it('reads the spool once, lists no segments and opens no unchanged record before the line is out', async () => {
    resetIoCounts();
    const w = world();
    await w.sleeping;
    // Before it slept it rehearsed the wake's three version checks, ten rounds (src/reader/rehearse.ts).
    expect(ioCounts().versionChecks).toBeGreaterThanOrEqual(3 * 10);
    resetIoCounts();
    w.spool.append([entry('ent_1', 'sess_a')]);
    const outcome = await w.run;
    expect(outcome.exit).toBe(0);
    expect(w.stdout.lines).toHaveLength(1);
    const [line] = w.stdout.lines;
    expect(line!.text).toContain('hello ent_1');
    expect(line!.text).not.toContain('POSSIBLY BOUNCED');
    // One read of the current segment, held open since before the sleep (no open on the wake):
    // the read that found the record is the one printed.
    expect(line!.io.opens).toEqual({});
    expect(line!.io.heldReads).toBe(1);
    expect(line!.io.listings).toBe(0);
    // session.json, stood-down.json and the directory cache: each checked (an lstat), none opened.
    expect(line!.io.versionChecks).toBe(3);
  });

  it('reads session.json again when it changed while the reader slept, and labels by what it says now', async () => {
    const w = world();
    await w.sleeping;
    resetIoCounts();
    // The connection moved to sess_b: what arrived under sess_a may have bounced.
    w.stateDir.write('session', session('sess_b', [{ id: 'sess_a', address: 'agent:agt_me#sess_a', replaced_at: 1, reason: 'session_lapsed' }]));
    w.spool.append([entry('ent_2', 'sess_a')]);
    await waitFor(() => w.stdout.lines.length > 0, { what: 'the line' });
    expect((await w.run).exit).toBe(0);
    const [line] = w.stdout.lines;
    expect(line!.text).toContain('POSSIBLY BOUNCED — arrived under sess_a');
    expect(line!.io.opens['session.json']).toBe(1);
    expect(line!.io.opens['bridge.ndjson']).toBeUndefined();
    expect(line!.io.heldReads).toBe(1);
    expect(line!.io.listings).toBe(0);
  });
});
