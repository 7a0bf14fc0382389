import type { ChildProcess } from 'node:child_process';
import { readFileSync, readdirSync, watch, writeFileSync } from 'node:fs';
import path from 'node:path';
import { startOhHai, collect, type RunResult } from '../../helpers/cli.js';
import { tempEnv, type TempEnv } from '../../helpers/env.js';
import { afterEach, expect } from 'vitest';
import { hubCall, startHub, type StartHubOptions, type TestHub } from '../../helpers/hub.js';
import { waitFor } from '../../helpers/wait.js';
import { undoAfterEach, useHub } from '../../helpers/world.js';
import { ensureDir, writeFileAtomic } from '../../../src/util/fs-durable.js';
import { selfStamp, sessionStateDir, stateKey, type ConsumerRecord, type ConsumerSettings, type SessionRecord } from '../../../src/spool/index.js';
import { consumerSettings } from '../../helpers/records.js';

/**
 * A test acting as the reader: it makes the state entry, writes settings.json and
 * reader.json itself, advances cursor.json, and starts `bin/oh-hai __consumer --entry <dir>`
 * as a real process against a real Hub.
 */

/** Small intervals so real processes run through holds, backoffs and heartbeats in seconds. */
export const FAST_KNOBS: NodeJS.ProcessEnv = {
  OH_HAI_HEARTBEAT_MS: '150',
  OH_HAI_BACKOFF_MIN_MS: '20',
  OH_HAI_BACKOFF_MAX_MS: '120',
  OH_HAI_CURSOR_POLL_MS: '150',
};

/** Hub flags for quick holds: a reconnect every ~0.6 s. */
export const FAST_HUB = ['--stream-max-hold-seconds', '0.6', '--keepalive-seconds', '0.25'];

export interface Agent {
  id: string;
  token: string;
}

export interface SpoolLine {
  seq: number;
  type: 'entry' | 'transition';
  session: string;
  entry?: { id: string; text?: string; kind: string; [k: string]: unknown };
  signature?: string;
  event?: string;
  from_session?: string;
  to_session?: string;
  reason?: string;
}

export class Bench {
  readonly dir: string;
  readonly env: NodeJS.ProcessEnv;
  readonly procs: ChildProcess[] = [];
  /** Everything the consumers printed on stderr, in start order (for failure reports). */
  readonly stderr: string[] = [];

  constructor(
    readonly hub: TestHub,
    readonly me: Agent,
    readonly peer: Agent,
    readonly temp: TempEnv,
    sessionKey: string,
    envExtra: NodeJS.ProcessEnv,
  ) {
    this.env = { ...temp.env, ...FAST_KNOBS, MA2H_AGENT_TOKENS: `${me.id}=${me.token}`, ...envExtra };
    this.dir = sessionStateDir(path.join(temp.root, 'state'), stateKey(hub.url, me.id, sessionKey));
    ensureDir(this.dir, 0o700);
  }

  settings(over: Partial<ConsumerSettings> = {}): ConsumerSettings {
    const s = consumerSettings({ hub: this.hub.url, agent_id: this.me.id, session_key: 'test-session', name: 'builder-1', interval_seconds: 0.2, ...over });
    writeFileAtomic(path.join(this.dir, 'settings.json'), JSON.stringify(s) + '\n');
    return s;
  }

  /** reader.json as an attending reader started by this test process. */
  attend(over: { heartbeatAgoMs?: number; deadlineInMs?: number; starterPid?: number; starterStartTime?: string | null } = {}): void {
    const now = Date.now();
    const me = selfStamp(process.pid);
    const starterPid = over.starterPid ?? process.ppid;
    const starter = { pid: starterPid, start_time: over.starterStartTime !== undefined ? over.starterStartTime : selfStamp(starterPid).start_time };
    writeFileAtomic(
      path.join(this.dir, 'reader.json'),
      JSON.stringify({
        ...me,
        starter_pid: starter.pid,
        starter_start_time: starter.start_time,
        started_at: now - (over.heartbeatAgoMs ?? 0),
        heartbeat_at: now - (over.heartbeatAgoMs ?? 0),
        deadline_at: now + (over.deadlineInMs ?? 600_000),
        declared_identity: true,
      }) + '\n',
    );
  }

  start(args: string[] = [], env: NodeJS.ProcessEnv = {}): ChildProcess {
    const p = startOhHai(['__consumer', '--entry', this.dir, ...args], { env: { ...this.env, ...env } });
    p.stdin?.end();
    const i = this.stderr.push('') - 1;
    p.stderr?.on('data', (d: Buffer) => (this.stderr[i] += d.toString('utf8')));
    this.procs.push(p);
    return p;
  }

  /** Start and wait for the exit. */
  async runToEnd(args: string[] = [], env: NodeJS.ProcessEnv = {}, timeoutMs = 60_000): Promise<RunResult> {
    const p = startOhHai(['__consumer', '--entry', this.dir, ...args], { env: { ...this.env, ...env } });
    p.stdin?.end();
    this.procs.push(p);
    return collect(p, timeoutMs);
  }

  /** What a failing test prints: the consumer's log, record and stderr. */
  /** What to print when a test fails; `logTail` keeps only the last lines of a long bridge.log. */
  report(logTail?: number): string {
    const log = logTail === undefined ? this.log() : this.log().split('\n').slice(-logTail).join('\n');
    return `bridge.log${logTail === undefined ? '' : ` (tail)`}:\n${log}\nconsumer.json: ${JSON.stringify(this.consumer())}\nstderr:\n${this.stderr.join('\n---\n')}`;
  }

  read<T>(name: string): T | null {
    try {
      return JSON.parse(readFileSync(path.join(this.dir, name), 'utf8')) as T;
    } catch {
      return null;
    }
  }

  consumer(): ConsumerRecord | null {
    return this.read<ConsumerRecord>('consumer.json');
  }

  session(): SessionRecord | null {
    return this.read<SessionRecord>('session.json');
  }

  spool(): SpoolLine[] {
    let text = '';
    try {
      text = readFileSync(path.join(this.dir, 'bridge.ndjson'), 'utf8');
    } catch {
      return [];
    }
    return text
      .split('\n')
      .filter((l) => l.endsWith('}'))
      .map((l) => JSON.parse(l) as SpoolLine);
  }

  entries(): SpoolLine[] {
    return this.spool().filter((l) => l.type === 'entry');
  }

  /** Entry ids the pending-ack ledger still holds (replaying its ops, read-only). */
  ledgerLive(): string[] {
    let text = '';
    try {
      text = readFileSync(path.join(this.dir, 'ledger.ndjson'), 'utf8');
    } catch {
      return [];
    }
    const live = new Set<string>();
    for (const line of text.split('\n')) {
      if (!line.endsWith('}')) continue;
      const op = JSON.parse(line) as { op: string; id?: string; ids?: string[] };
      if (op.op === 'entry' && op.id) live.add(op.id);
      if (op.op === 'acknowledged') for (const id of op.ids ?? []) live.delete(id);
    }
    return [...live];
  }

  log(): string {
    try {
      return readFileSync(path.join(this.dir, 'bridge.log'), 'utf8');
    } catch {
      return '';
    }
  }

  /** Act as the reader: mark records up to seq as printed (cursor = seq and the byte offset after it). */
  advanceCursor(seq: number): void {
    const text = readFileSync(path.join(this.dir, 'bridge.ndjson'), 'utf8');
    let offset = 0;
    for (const line of text.split('\n')) {
      if (line === '') break;
      const rec = JSON.parse(line) as { seq: number };
      offset += Buffer.byteLength(line, 'utf8') + 1;
      if (rec.seq === seq) {
        writeFileAtomic(path.join(this.dir, 'cursor.json'), JSON.stringify({ seq, offset }) + '\n');
        return;
      }
    }
    throw new Error(`no record with seq ${seq} in the spool`);
  }

  async waitRunning(): Promise<ConsumerRecord> {
    return waitFor(
      () => {
        const c = this.consumer();
        return c && c.state === 'running' && this.session() ? c : null;
      },
      { what: 'consumer running with a session' },
    );
  }

  /** Wait for consumer.json to say stopped, and for the process to exit. */
  async waitStopped(p: ChildProcess, timeoutMs = 30_000): Promise<{ record: ConsumerRecord; code: number | null }> {
    const code = await new Promise<number | null>((resolve) => {
      if (p.exitCode !== null || p.signalCode !== null) resolve(p.exitCode);
      else p.once('exit', (c) => resolve(c));
    });
    const record = await waitFor(
      () => {
        const c = this.consumer();
        return c && c.state === 'stopped' ? c : null;
      },
      { timeoutMs, what: 'consumer.json state stopped' },
    );
    return { record, code };
  }

  /** A notify from the peer to our session address; returns the message id. */
  async notify(text: string, to = this.address()): Promise<string> {
    const r = await hubCall(this.hub, 'POST', '/v1/messages', { token: this.peer.token, body: { to, intent: 'notify', text } });
    if (r.status !== 202 && r.status !== 200) throw new Error(`send failed: ${r.status} ${r.text}`);
    return r.body.message.id as string;
  }

  async ask(text: string, to = this.address()): Promise<string> {
    const r = await hubCall(this.hub, 'POST', '/v1/messages', { token: this.peer.token, body: { to, intent: 'ask', text } });
    if (r.status !== 202) throw new Error(`send failed: ${r.status} ${r.text}`);
    return r.body.message.id as string;
  }

  async directive(text: string, to = this.address()): Promise<string> {
    const r = await hubCall(this.hub, 'POST', '/v1/directives', { token: this.hub.humanToken, body: { to, text } });
    if (r.status !== 202) throw new Error(`directive failed: ${r.status} ${r.text}`);
    return r.body.message.id as string;
  }

  /** The sender's view of a message's delivery track. */
  async track(messageId: string): Promise<{ state: string; track: { state: string; at: string }[] }> {
    const r = await hubCall(this.hub, 'GET', `/v1/messages/${messageId}`, { token: this.peer.token });
    return r.body.message;
  }

  address(): string {
    const s = this.session();
    if (!s) throw new Error('no session.json yet');
    return s.address;
  }

  stateFiles(): string[] {
    return readdirSync(this.dir).map((f) => path.join(this.dir, f));
  }

  writeRaw(name: string, text: string): void {
    writeFileSync(path.join(this.dir, name), text, { mode: 0o600 });
  }

  async dispose(): Promise<void> {
    for (const p of this.procs) {
      if (p.exitCode === null && p.signalCode === null) {
        p.kill('SIGKILL');
        await new Promise((r) => p.once('exit', r));
      }
    }
    this.temp.cleanup();
  }
}

export interface BenchOptions {
  sessionKey?: string;
  env?: NodeJS.ProcessEnv;
  me?: Agent;
  peer?: Agent;
}

export async function makeBench(hub: TestHub, opts: BenchOptions = {}): Promise<Bench> {
  const me = opts.me ?? (await hub.mintAgent('me'));
  const peer = opts.peer ?? (await hub.mintAgent('peer'));
  return new Bench(hub, me, peer, tempEnv(), opts.sessionKey ?? 'test-session', opts.env ?? {});
}

/**
 * Every message of `sent` acknowledged at the Hub (`pass` plays the reader between looks), then
 * spooled exactly once: none lost, none twice.
 */
export async function expectEachAcknowledgedOnce(bench: Bench, sent: readonly string[], pass: () => void): Promise<void> {
  await waitFor(
    async () => {
      pass();
      const states = await Promise.all(sent.map(async (id) => (await bench.track(id)).state));
      return states.every((s) => s === 'acknowledged');
    },
    { what: 'every message acknowledged', timeoutMs: 45_000, intervalMs: 100 },
  );
  const spooled = bench.entries().map((e) => e.entry!.message_id as string);
  expect(new Set(spooled).size, 'no entry spooled twice').toBe(spooled.length);
  expect([...spooled].sort(), 'none lost').toEqual([...sent].sort());
}

/** SIGKILL `consumer` as soon as `ready()` after a change to `watched` (each write(2) wakes the watch), or after `ms`. */
export function killWhen(watched: string, consumer: ChildProcess, ready: () => boolean, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      watcher.close();
      consumer.kill('SIGKILL');
      resolve();
    };
    const watcher = watch(watched, () => {
      if (ready()) done();
    });
    const timer = setTimeout(done, ms);
  });
}

export const exited = (p: ChildProcess): Promise<void> =>
  p.exitCode !== null || p.signalCode !== null ? Promise.resolve() : new Promise((r) => p.once('exit', () => r()));

/** A consumer test file's world: its Hub, and the benches and Hubs each test makes, undone after it. */
export interface BenchWorld {
  readonly hub: TestHub;
  /** A new bench on the file's Hub, or on `on`; its consumers are killed and its HOME removed after the test. */
  bench(opts?: BenchOptions & { on?: TestHub }): Promise<Bench>;
  /** A Hub of this test's own (other knobs, or one the test kills), disposed after the test once its benches are. */
  ownHub(opts: StartHubOptions): Promise<TestHub>;
}

/**
 * One Hub for the file, started with `hubOpts`. After each test: a failed test prints each
 * bench's report (`logTail` shortens a long bridge.log), the benches are disposed, then the
 * test's own Hubs, then the file Hub's faults are cleared (when it has fault injection).
 */
export function useBenches(hubOpts: StartHubOptions, report: { logTail?: number } = {}): BenchWorld {
  const world = useHub(hubOpts);
  // After hooks run in reverse and a throwing one ends the rest: clearing the faults goes last, after every process is gone.
  if (hubOpts.faults) {
    afterEach(async () => {
      await world.hub.faults([]);
    });
  }
  const keepHub = undoAfterEach((hub: TestHub) => hub.dispose());
  const keepBench = undoAfterEach(async (bench: Bench, failed: boolean) => {
    if (failed) console.log(bench.report(report.logTail));
    await bench.dispose();
  });
  return {
    get hub() {
      return world.hub;
    },
    bench: async ({ on, ...opts } = {}) => keepBench(await makeBench(on ?? world.hub, opts)),
    ownHub: async (opts) => keepHub(await startHub(opts)),
  };
}

export { startHub, hubCall, waitFor };
